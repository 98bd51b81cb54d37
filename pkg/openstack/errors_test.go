package openstack

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/sitebus/sitebus/pkg/backend"
)

func TestClassifyReadsEachServicesErrorBody(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		body       string
		wantMsg    string
		terminal   bool
		quota      bool
		conflict   bool
		notFound   bool
		wantInText string
	}{
		{"Neutron OverQuota", 409, `{"NeutronError":{"type":"OverQuota","message":"Quota exceeded for resources: ['port'].","detail":""}}`,
			"Quota exceeded for resources: ['port'].", true, true, false, false, "OverQuota"},
		{"Neutron address taken", 409, `{"NeutronError":{"type":"IpAddressAlreadyAllocated","message":"IP address 10.0.0.10 already allocated","detail":""}}`,
			"IP address 10.0.0.10 already allocated", true, false, false, false, "IpAddressAlreadyAllocated"},
		{"Neutron in use", 409, `{"NeutronError":{"type":"NetworkInUse","message":"Unable to complete operation on network x.","detail":""}}`,
			"Unable to complete operation on network x.", false, false, true, false, "NetworkInUse"},
		{"Nova quota", 403, `{"forbidden":{"code":403,"message":"Quota exceeded for cores: Requested 4, but already used 20 of 20 cores"}}`,
			"Quota exceeded for cores: Requested 4, but already used 20 of 20 cores", true, true, false, false, "cores"},
		{"Nova policy", 403, `{"forbidden":{"code":403,"message":"Policy doesn't allow x to be performed."}}`,
			"Policy doesn't allow x to be performed.", true, false, false, false, "Policy"},
		{"Cinder over limit", 413, `{"overLimit":{"code":413,"message":"VolumeSizeExceedsAvailableQuota: gigabytes","retryAfter":"0"}}`,
			"VolumeSizeExceedsAvailableQuota: gigabytes", true, true, false, false, "gigabytes"},
		{"Keystone 401", 401, `{"error":{"code":401,"message":"The request you have made requires authentication.","title":"Unauthorized"}}`,
			"The request you have made requires authentication.", true, false, false, false, "401 Unauthorized"},
		{"Nova not found", 404, `{"itemNotFound":{"code":404,"message":"Instance x could not be found."}}`,
			"Instance x could not be found.", true, false, false, true, "404"},
		{"Glance text", 500, "500 Internal Server Error\n\n  boom\n\n   ", "500 Internal Server Error boom", false, false, false, false, "boom"},
		{"Nova conflict", 409, `{"conflictingRequest":{"code":409,"message":"Cannot 'delete' instance x while it is in task_state rebuilding"}}`,
			"Cannot 'delete' instance x while it is in task_state rebuilding", false, false, true, false, "task_state"},
		{"502 from a proxy", 502, "<html>Bad Gateway</html>", "<html>Bad Gateway</html>", false, false, false, false, "502"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := gophercloud.ErrUnexpectedResponseCode{Method: "POST", URL: "http://x/y", Expected: []int{201},
				Actual: tc.status, Body: []byte(tc.body)}
			err := classify("create", "network n", raw)
			var e *Error
			if !errors.As(err, &e) || e.Status != tc.status || e.Message != tc.wantMsg {
				t.Fatalf("err %#v, want status %d message %q", err, tc.status, tc.wantMsg)
			}
			for _, c := range []struct {
				what string
				got  bool
				want bool
			}{{"terminal", IsTerminal(err), tc.terminal}, {"quota", IsQuota(err), tc.quota},
				{"conflict", errors.Is(err, ErrConflict), tc.conflict}, {"not found", IsNotFound(err), tc.notFound}} {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v (%v)", c.what, c.got, c.want, err)
				}
			}
			if !strings.Contains(err.Error(), tc.wantInText) || !strings.Contains(err.Error(), "network n") {
				t.Errorf("message %q lacks %q or the object", err, tc.wantInText)
			}
		})
	}
}

func TestClassifyKeepsAnErrorOfItsOwn(t *testing.T) {
	own := notManaged("delete", "port p", "proj", Owner("u"))
	if got := classify("other", "x", fmt.Errorf("wrapped: %w", own)); !errors.Is(got, backend.ErrNotManaged) {
		t.Fatalf("got %v", got)
	}
	if classify("x", "y", nil) != nil {
		t.Fatal("nil became an error")
	}
	if err := classify("x", "y", errors.New("connection refused")); IsTerminal(err) {
		t.Fatalf("a transport error is terminal: %v", err)
	}
}

func TestOwnerMarks(t *testing.T) {
	o := Owner("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d")
	for _, tc := range []struct {
		owner Owner
		desc  string
		want  bool
	}{
		{o, o.Mark(), true},
		{o, o.describe("Rancher cluster k8s-x"), true},
		{o, "managed by sitebus for 99999999-9999-4999-8999-999999999999", false},
		{o, "", false},
		{"", "managed by sitebus for ", false},
	} {
		if got := tc.owner.Marks(tc.desc); got != tc.want {
			t.Errorf("%q.Marks(%q) = %v, want %v", tc.owner, tc.desc, got, tc.want)
		}
	}
}

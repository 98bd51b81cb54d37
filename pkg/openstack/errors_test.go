package openstack

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/sitebus/sitebus/pkg/fault"
)

func TestClassifyReadsEachServicesErrorBody(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		body       string
		wantMsg    string
		kind       fault.Kind // fault.KindOf: the kind that decides
		terminal   bool
		quota      bool
		notFound   bool
		wantInText string
	}{
		{"Neutron OverQuota is a terminal refusal", 409, `{"NeutronError":{"type":"OverQuota","message":"Quota exceeded for resources: ['port'].","detail":""}}`,
			"Quota exceeded for resources: ['port'].", fault.Rejected, true, true, false, "OverQuota"},
		{"Neutron address taken is a terminal refusal", 409, `{"NeutronError":{"type":"IpAddressAlreadyAllocated","message":"IP address 10.0.0.10 already allocated","detail":""}}`,
			"IP address 10.0.0.10 already allocated", fault.Rejected, true, false, false, "IpAddressAlreadyAllocated"},
		{"Neutron in use is a conflict, retried", 409, `{"NeutronError":{"type":"NetworkInUse","message":"Unable to complete operation on network x.","detail":""}}`,
			"Unable to complete operation on network x.", fault.Conflict, false, false, false, "NetworkInUse"},
		{"Nova quota is a terminal refusal", 403, `{"forbidden":{"code":403,"message":"Quota exceeded for cores: Requested 4, but already used 20 of 20 cores"}}`,
			"Quota exceeded for cores: Requested 4, but already used 20 of 20 cores", fault.Rejected, true, true, false, "cores"},
		{"Nova policy is a terminal refusal", 403, `{"forbidden":{"code":403,"message":"Policy doesn't allow x to be performed."}}`,
			"Policy doesn't allow x to be performed.", fault.Rejected, true, false, false, "Policy"},
		{"Cinder over limit is a terminal quota", 413, `{"overLimit":{"code":413,"message":"VolumeSizeExceedsAvailableQuota: gigabytes","retryAfter":"0"}}`,
			"VolumeSizeExceedsAvailableQuota: gigabytes", fault.Rejected, true, true, false, "gigabytes"},
		{"Keystone 401 is refused credentials", 401, `{"error":{"code":401,"message":"The request you have made requires authentication.","title":"Unauthorized"}}`,
			"The request you have made requires authentication.", fault.Credentials, true, false, false, "401 Unauthorized"},
		{"Nova not found is terminal", 404, `{"itemNotFound":{"code":404,"message":"Instance x could not be found."}}`,
			"Instance x could not be found.", fault.Invalid, true, false, true, "404"},
		{"a Glance 500 in plain text is unavailable, retried", 500, "500 Internal Server Error\n\n  boom\n\n   ", "500 Internal Server Error boom", fault.Unavailable, false, false, false, "boom"},
		{"Nova conflict is retried", 409, `{"conflictingRequest":{"code":409,"message":"Cannot 'delete' instance x while it is in task_state rebuilding"}}`,
			"Cannot 'delete' instance x while it is in task_state rebuilding", fault.Conflict, false, false, false, "task_state"},
		{"a 502 from a proxy is unavailable, retried", 502, "<html>Bad Gateway</html>", "<html>Bad Gateway</html>", fault.Unavailable, false, false, false, "502"},
		{"a 429 is unavailable, retried", 429, `{"message":"slow down"}`, "slow down", fault.Unavailable, false, false, false, "429"},
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
			}{{"kind " + string(tc.kind), fault.KindOf(err) == tc.kind, true}, {"terminal", fault.IsTerminal(err), tc.terminal},
				{"quota", IsQuota(err), tc.quota}, {"not found", IsNotFound(err), tc.notFound}} {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v (%v, kind %q)", c.what, c.got, c.want, err, fault.KindOf(err))
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
	if got := classify("other", "x", fmt.Errorf("wrapped: %w", own)); !errors.Is(got, fault.NotManaged) || !fault.IsTerminal(got) {
		t.Fatalf("got %v", got)
	}
	if classify("x", "y", nil) != nil {
		t.Fatal("nil became an error")
	}
	if err := classify("x", "y", errors.New("connection refused")); fault.IsTerminal(err) || !errors.Is(err, fault.Unavailable) {
		t.Fatalf("a transport error is terminal: %v", err)
	}
	if err := classify("x", "y", x509.UnknownAuthorityError{}); !errors.Is(err, fault.Rejected) || !strings.Contains(err.Error(), "cacert") {
		t.Fatalf("an unverified certificate: %v, want a terminal refusal naming cacert", err)
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

func TestAnErrorObjectUnderA200IsToldFromAResult(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want bool
	}{
		{"Keystone's error", `{"error": {"code": 500, "message": "injected fault", "title": "Internal Server Error"}}`, true},
		{"Nova's error", `{"itemNotFound": {"code": 404, "message": "Instance x could not be found."}}`, true},
		{"Neutron's error", `{"NeutronError": {"type": "NetworkNotFound", "message": "Network x could not be found.", "detail": ""}}`, true},
		{"a server", `{"server": {"id": "x", "status": "ERROR", "fault": {"code": 500, "message": "No valid host"}}}`, false},
		{"a token", `{"token": {"methods": ["password"], "expires_at": "2026-11-27T00:00:00Z"}}`, false},
		{"a list", `{"servers": []}`, false},
		{"not JSON", `<html>`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isErrorObject([]byte(tc.body)); got != tc.want {
				t.Fatalf("isErrorObject = %v, want %v", got, tc.want)
			}
		})
	}
}

package waldursim

import "testing"

// Expected strings are what CPython 3 json.dumps prints for the same dict.
func TestPyObjectEncodesLikePythonJSONDumps(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   PyObject
		want string
	}{
		{"order payload keeps insertion order",
			PyObject{{"order_uuid", "ab12"}, {"order_state", "pending-provider"}, {"offering_uuid", "cd34"}},
			`{"order_uuid": "ab12", "order_state": "pending-provider", "offering_uuid": "cd34"}`},
		{"booleans and null",
			PyObject{{"paused", true}, {"downscaled", false}, {"resource_backend_id", nil}},
			`{"paused": true, "downscaled": false, "resource_backend_id": null}`},
		{"non-ASCII is escaped", PyObject{{"project_name", "Müller ☃ 😀"}},
			`{"project_name": "M\u00fcller \u2603 \ud83d\ude00"}`},
		{"control characters and quotes", PyObject{{"s", "a\"b\\c\nd\x01\x7f"}},
			`{"s": "a\"b\\c\nd\u0001\u007f"}`},
		{"lists and numbers", PyObject{{"ids", []string{"a", "b"}}, {"n", 3}, {"f", 1.0}, {"g", 0.5}, {"e", 1e-7}},
			`{"ids": ["a", "b"], "n": 3, "f": 1.0, "g": 0.5, "e": 1e-07}`},
		{"empty object", PyObject{}, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.Encode(); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

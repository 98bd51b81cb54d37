package kubeapi

import "testing"

func TestOnlyAFailureStatusIsAnErrorObject(t *testing.T) {
	for body, want := range map[string]bool{
		`{"kind":"Status","status":"Failure","code":500}`:  true,
		`{"kind":"Status","status":"Success"}`:             false,
		`{"kind":"Namespace","status":{"phase":"Active"}}`: false,
		`{"kind":"Project","status":"Failure"}`:            false,
		`not json`:                                         false,
	} {
		if got := IsFailureStatus([]byte(body)); got != want {
			t.Errorf("IsFailureStatus(%s) = %v, want %v", body, got, want)
		}
	}
}

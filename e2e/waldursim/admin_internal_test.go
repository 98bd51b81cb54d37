package waldursim

import "testing"

func TestOrderRequestMatchesOneOrdersPathsInEitherSpelling(t *testing.T) {
	match := orderRequest("0a1b2c3d4e5f4a7b8c9d0e1f2a3b4c5d")
	for path, want := range map[string]bool{
		"/api/marketplace-orders/0a1b2c3d4e5f4a7b8c9d0e1f2a3b4c5d/set_state_done/": true,
		"/api/marketplace-orders/0a1b2c3d-4e5f-4a7b-8c9d-0e1f2a3b4c5d/":            true,
		"/api/marketplace-orders/0a1b2c3d4e5f4a7b8c9d0e1f2a3b4c5e/set_state_done/": false,
		"/api/marketplace-orders/": false,
		"/api/marketplace-provider-resources/0a1b2c3d4e5f4a7b8c9d0e1f2a3b4c5d/team/": false,
		"/api/marketplace-orders/0a1b2c3d4e5f4a7b8c9d0e1f2a3b4c5d0/set_state_erred/": false,
	} {
		if got := match(path); got != want {
			t.Errorf("orderRequest matches %s: %v, want %v", path, got, want)
		}
	}
}

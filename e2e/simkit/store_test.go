package simkit

import (
	"slices"
	"testing"
)

func TestStoreKeepsCreationOrderAndListsByID(t *testing.T) {
	type obj struct{ owner string }
	var s Store[obj] // the zero Store is ready to use
	for _, id := range []string{"c", "a", "b"} {
		if !s.Put(id, &obj{owner: "o-" + id}) {
			t.Fatalf("Put %s refused", id)
		}
	}
	if s.Put("a", &obj{}) {
		t.Error("Put of a taken id succeeded")
	}
	ids := []string{"a", "b", "x", "y"}
	if id := s.Create(func() string { id := ids[0]; ids = ids[1:]; return id }, &obj{owner: "o-a"}); id != "x" {
		t.Errorf("Create took %q, want the first free id x", id)
	}
	owners := func(items []*obj) []string {
		var out []string
		for _, o := range items {
			out = append(out, o.owner)
		}
		return out
	}
	if got := owners(s.List(nil)); !slices.Equal(got, []string{"o-c", "o-a", "o-b", "o-a"}) {
		t.Errorf("List = %v, want creation order", got)
	}
	if got := owners(s.ListByID(nil)); !slices.Equal(got, []string{"o-a", "o-b", "o-c", "o-a"}) {
		t.Errorf("ListByID = %v, want id order", got)
	}
	if n := s.DeleteFunc(func(o *obj) bool { return o.owner == "o-a" }); n != 2 || s.Get("a") != nil || s.Get("x") != nil {
		t.Errorf("DeleteFunc removed %d, a and x left: %v %v", n, s.Get("a"), s.Get("x"))
	}
	if s.Delete("c") == nil || s.Delete("c") != nil || s.Count(nil) != 1 {
		t.Errorf("Delete: %d left, want 1", s.Count(nil))
	}
	if got := s.Copies(func(o *obj) bool { return o.owner == "none" }); got != nil {
		t.Errorf("Copies of nothing = %#v, want nil", got)
	}
}

package keycloaksim

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// groupBody is what create and update accept.
type groupBody struct {
	ID         string              `json:"id"`
	Name       string              `json:"name"`
	Attributes map[string][]string `json:"attributes"`
}

func decodeGroup(r *http.Request) (groupBody, *apiError) {
	var b groupBody
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || json.Unmarshal(data, &b) != nil {
		return b, errBadJSON
	}
	return b, nil
}

// listGroups is GET /groups as Keycloak ≥ 23 serves it: without search or
// q, one page of top-level groups, each with subGroupCount and no inlined
// subGroups; with search (name contains, or equals with exact=true) or q
// (attribute key:value pairs), the matching groups at any depth, paged, and
// (populateHierarchy, the default) each shown inside its ancestors.
func (s *Server) listGroups(w http.ResponseWriter, r *http.Request, rm *realm) *apiError {
	q := r.URL.Query()
	first, max, err := pageParams(r, -1)
	if err != nil {
		return err
	}
	brief := boolParam(r, "briefRepresentation", true)
	withCount := boolParam(r, "subGroupsCount", true)
	var matched []*group
	switch {
	case q.Has("q"):
		matched = rm.groupsWithAttributes(parseQuery(q.Get("q")))
	case q.Has("search"):
		matched = rm.searchGroups(strings.TrimSpace(q.Get("search")), boolParam(r, "exact", false))
	default:
		top := page(rm.children(""), first, max)
		simkit.WriteJSON(w, http.StatusOK, rm.groupReps(top, brief, withCount))
		return nil
	}
	matched = page(matched, first, max)
	if !boolParam(r, "populateHierarchy", true) {
		simkit.WriteJSON(w, http.StatusOK, rm.groupReps(matched, brief, withCount))
		return nil
	}
	simkit.WriteJSON(w, http.StatusOK, rm.hierarchy(matched, brief, withCount))
	return nil
}

func (rm *realm) groupReps(gs []*group, brief, withCount bool) []*groupRep {
	out := make([]*groupRep, 0, len(gs))
	for _, g := range gs {
		out = append(out, rm.groupRepOf(g, brief, withCount))
	}
	return out
}

// searchGroups matches names at any depth: a case-insensitive substring,
// or (exact) the name itself. Results are ordered by name.
func (rm *realm) searchGroups(search string, exact bool) []*group {
	out := named(slices.Collect(maps.Values(rm.groups)), search, exact)
	sortGroups(out)
	return out
}

// named keeps the groups whose name matches search as Keycloak's group
// searches do: a case-insensitive substring or (exact) the name itself.
func named(gs []*group, search string, exact bool) []*group {
	var out []*group
	for _, g := range gs {
		if exact && g.name == search || !exact && strings.Contains(strings.ToLower(g.name), strings.ToLower(search)) {
			out = append(out, g)
		}
	}
	return out
}

// parseQuery reads q's "key:value key2:value2" (values may be quoted).
func parseQuery(q string) map[string]string {
	out := map[string]string{}
	for q = strings.TrimSpace(q); q != ""; q = strings.TrimSpace(q) {
		key, rest, ok := strings.Cut(q, ":")
		if !ok {
			break
		}
		var val string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				val, q = rest[1:], ""
			} else {
				val, q = rest[1:end+1], rest[end+2:]
			}
		} else {
			val, q, _ = strings.Cut(rest, " ")
		}
		out[strings.TrimSpace(key)] = val
	}
	return out
}

func (rm *realm) groupsWithAttributes(want map[string]string) []*group {
	var out []*group
	for _, g := range rm.groups {
		ok := len(want) > 0
		for k, v := range want {
			if !contains(g.attrs[k], v) {
				ok = false
			}
		}
		if ok {
			out = append(out, g)
		}
	}
	sortGroups(out)
	return out
}

func contains(vals []string, v string) bool {
	for _, x := range vals {
		if x == v {
			return true
		}
	}
	return false
}

// hierarchy nests each matched group inside its ancestors, as Keycloak's
// GroupUtils.populateGroupHierarchyFromSubGroups does: the result is the
// top-level ancestors, sorted by name, whose subGroups hold only the paths
// to the matches.
func (rm *realm) hierarchy(matched []*group, brief, withCount bool) []*groupRep {
	reps := map[string]*groupRep{}
	rep := func(g *group) *groupRep {
		if r := reps[g.id]; r != nil {
			return r
		}
		r := rm.groupRepOf(g, brief, withCount)
		reps[g.id] = r
		return r
	}
	var roots []*group
	for _, g := range matched {
		cur := rep(g)
		for g.parent != "" {
			p := rm.groups[g.parent]
			prep := rep(p)
			if !hasRep(prep.SubGroups, cur.ID) {
				prep.SubGroups = append(prep.SubGroups, cur)
			}
			g, cur = p, prep
		}
		if !hasGroup(roots, g.id) {
			roots = append(roots, g)
		}
	}
	sortGroups(roots)
	out := make([]*groupRep, 0, len(roots))
	for _, g := range roots {
		out = append(out, reps[g.id])
	}
	return out
}

func hasRep(reps []*groupRep, id string) bool {
	for _, r := range reps {
		if r.ID == id {
			return true
		}
	}
	return false
}

func hasGroup(gs []*group, id string) bool {
	for _, g := range gs {
		if g.id == id {
			return true
		}
	}
	return false
}

// countGroups is GET /groups/count: {"count": n} for all groups, the
// top-level ones (top=true) or those matching search.
func (s *Server) countGroups(w http.ResponseWriter, r *http.Request, rm *realm) *apiError {
	q := r.URL.Query()
	n := len(rm.groups)
	switch {
	case q.Has("search"):
		n = len(rm.searchGroups(strings.TrimSpace(q.Get("search")), false))
	case boolParam(r, "top", false):
		n = len(rm.children(""))
	}
	simkit.WriteJSON(w, http.StatusOK, map[string]int{"count": n})
	return nil
}

// createTopGroup is POST /groups: 201 with a Location header for a new
// group; a body with the id of an existing group moves it to the top level
// (204).
func (s *Server) createTopGroup(w http.ResponseWriter, r *http.Request, rm *realm) *apiError {
	return s.addGroup(w, r, rm, "")
}

// createChild is POST /groups/{id}/children, the same under a parent.
func (s *Server) createChild(w http.ResponseWriter, r *http.Request, rm *realm, parent *group) *apiError {
	return s.addGroup(w, r, rm, parent.id)
}

func (s *Server) addGroup(w http.ResponseWriter, r *http.Request, rm *realm, parent string) *apiError {
	b, err := decodeGroup(r)
	if err != nil {
		return err
	}
	if strings.TrimSpace(b.Name) == "" {
		return errorMessage(http.StatusBadRequest, "Group name is missing")
	}
	if b.ID != "" {
		return rm.moveGroup(w, b, parent)
	}
	g, err := rm.createGroup("", b.Name, parent, b.Attributes)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "http://"+r.Host+"/admin/realms/"+rm.name+"/groups/"+g.id)
	if parent == "" {
		w.WriteHeader(http.StatusCreated)
		return nil
	}
	simkit.WriteJSON(w, http.StatusCreated, rm.groupRepOf(g, false, false))
	return nil
}

// moveGroup re-parents an existing group (and renames it to the body's
// name), refusing a cycle or a duplicate sibling name.
func (rm *realm) moveGroup(w http.ResponseWriter, b groupBody, parent string) *apiError {
	g := rm.groups[b.ID]
	if g == nil {
		return errGroupNotFound
	}
	if parent != "" && rm.isAncestor(g.id, parent) {
		return errorMessage(http.StatusBadRequest, "Cannot move group into itself or one of its subgroups")
	}
	if rm.siblingNamed(parent, b.Name, g.id) != nil {
		return duplicateName(parent, b.Name)
	}
	g.parent, g.name = parent, b.Name
	if b.Attributes != nil {
		g.attrs = cloneAttrs(b.Attributes)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// getGroup is GET /groups/{id}: the full representation with subGroupCount
// and, since Keycloak 23, no inlined subGroups.
func (s *Server) getGroup(w http.ResponseWriter, r *http.Request, rm *realm, g *group) *apiError {
	simkit.WriteJSON(w, http.StatusOK, rm.groupRepOf(g, false, true))
	return nil
}

// updateGroup is PUT /groups/{id}: renames (unique among siblings) and
// replaces the attributes when the body has them.
func (s *Server) updateGroup(w http.ResponseWriter, r *http.Request, rm *realm, g *group) *apiError {
	b, err := decodeGroup(r)
	if err != nil {
		return err
	}
	if strings.TrimSpace(b.Name) == "" {
		return errorMessage(http.StatusBadRequest, "Group name is missing")
	}
	if rm.siblingNamed(g.parent, b.Name, g.id) != nil {
		return duplicateName(g.parent, b.Name)
	}
	g.name = b.Name
	if b.Attributes != nil {
		g.attrs = cloneAttrs(b.Attributes)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deleteGroup is DELETE /groups/{id}; the subtree and memberships go too.
func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request, rm *realm, g *group) *apiError {
	rm.deleteGroup(g.id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listChildren is GET /groups/{id}/children: first (0), max (10, as in
// Keycloak), briefRepresentation (false), and the search/exact filter of
// Keycloak ≥ 25.
func (s *Server) listChildren(w http.ResponseWriter, r *http.Request, rm *realm, g *group) *apiError {
	first, max, err := pageParams(r, 10)
	if err != nil {
		return err
	}
	kids := rm.children(g.id)
	if q := r.URL.Query(); q.Has("search") {
		kids = named(kids, q.Get("search"), boolParam(r, "exact", false))
	}
	kids = page(kids, first, max)
	simkit.WriteJSON(w, http.StatusOK, rm.groupReps(kids, boolParam(r, "briefRepresentation", false), true))
	return nil
}

// listMembers is GET /groups/{id}/members: direct members by username,
// first (0), max (100, Keycloak's default page).
func (s *Server) listMembers(w http.ResponseWriter, r *http.Request, rm *realm, g *group) *apiError {
	first, max, err := pageParams(r, 100)
	if err != nil {
		return err
	}
	brief := boolParam(r, "briefRepresentation", false)
	members := page(rm.groupMembers(g.id), first, max)
	out := make([]*userRep, 0, len(members))
	for _, u := range members {
		out = append(out, userRepOf(u, brief))
	}
	simkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

// groupByPath is GET /group-by-path/{path}.
func (s *Server) groupByPath(w http.ResponseWriter, r *http.Request, rm *realm) *apiError {
	g := rm.groupAtPath(r.PathValue("path"))
	if g == nil {
		return errGroupPathUnset
	}
	simkit.WriteJSON(w, http.StatusOK, rm.groupRepOf(g, false, true))
	return nil
}

func (rm *realm) groupAtPath(p string) *group {
	var cur *group
	parent := ""
	for _, name := range strings.Split(strings.Trim(p, "/"), "/") {
		cur = rm.siblingNamed(parent, name, "")
		if cur == nil {
			return nil
		}
		parent = cur.id
	}
	return cur
}

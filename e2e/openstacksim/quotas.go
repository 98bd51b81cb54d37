package openstacksim

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// Quotas are per-project limits by the services' own resource names:
// Neutron's network, subnet, port, router, floatingip, security_group,
// security_group_rule; Nova's instances, cores, ram (MiB); Cinder's
// volumes, gigabytes and gigabytes_<volume type>. -1 is unlimited; a name
// not set takes the service's default (gigabytes_<type>: unlimited).
type Quotas map[string]int

// defaultQuotas are the services' shipped defaults.
var defaultQuotas = Quotas{
	"network": 100, "subnet": 100, "port": 500, "router": 10, "floatingip": 50,
	"security_group": 10, "security_group_rule": 100,
	"instances": 10, "cores": 20, "ram": 51200,
	"volumes": 10, "gigabytes": 1000,
}

func (q Quotas) withDefaults() Quotas {
	out := maps.Clone(defaultQuotas)
	maps.Copy(out, q)
	return out
}

// limit is project's limit on resource.
func (s *Server) limit(project, resource string) int {
	if v, ok := s.st.quotas[project][resource]; ok {
		return v
	}
	if v, ok := s.opts.Quotas[resource]; ok {
		return v
	}
	return -1
}

// SetQuota sets project's limit on resource (see Quotas), as an admin's
// quota update would.
func (s *Server) SetQuota(project, resource string, limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setQuota(project, resource, limit)
}

func (s *Server) setQuota(project, resource string, limit int) {
	q := s.st.quotas[project]
	if q == nil {
		q = Quotas{}
		s.st.quotas[project] = q
	}
	q[resource] = limit
}

// usage is what project holds of each quota's resource.
func (s *Server) usage(project string) map[string]int {
	used := map[string]int{}
	for name, col := range map[string]interface{ CountOwned(*Server, string) int }{
		"network": networks, "subnet": subnets, "port": ports, "router": routers, "floatingip": floatingIPs,
		"security_group": secGroups, "security_group_rule": rules,
	} {
		used[name] = col.CountOwned(s, project)
	}
	for _, sv := range where(s.st.servers, func(sv *Instance) bool { return sv.ProjectID == project }) {
		f := cmp.Or(s.flavor(sv.FlavorID), &Flavor{})
		used["instances"], used["cores"], used["ram"] = used["instances"]+1, used["cores"]+f.VCPUs, used["ram"]+f.RAM
	}
	for _, v := range where(s.st.volumes, func(v *Volume) bool { return v.ProjectID == project }) {
		used["volumes"]++
		used["gigabytes"] += v.Size
		used["gigabytes_"+v.VolumeType] += v.Size
	}
	return used
}

// overQuota is the first resource of names whose limit project would pass
// by adding the amount at the same index, with what project holds and its
// limit; "" when none.
func (s *Server) overQuota(project string, names []string, add ...int) (name string, used, limit int) {
	u := s.usage(project)
	for i, n := range names {
		if l := s.limit(project, n); l >= 0 && u[n]+add[i] > l {
			return n, u[n], l
		}
	}
	return "", 0, 0
}

// checkNeutronQuota answers Neutron's 409 OverQuota when project cannot
// have add more of resource.
func (s *Server) checkNeutronQuota(project, resource string, add int) *apiErr {
	if n, _, _ := s.overQuota(project, []string{resource}, add); n != "" {
		return neutronErr(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['"+resource+"'].")
	}
	return nil
}

// checkNovaQuota is Nova's 403 "Quota exceeded" for one more server of f.
func (s *Server) checkNovaQuota(project string, f *Flavor) *apiErr {
	if n, used, l := s.overQuota(project, novaQuotaNames, 1, f.VCPUs, f.RAM); n != "" {
		req := map[string]int{"instances": 1, "cores": f.VCPUs, "ram": f.RAM}[n]
		return novaErr(http.StatusForbidden, fmt.Sprintf("Quota exceeded for %s: Requested %d, but already used %d of %d %s",
			n, req, used, l, n))
	}
	return nil
}

var novaQuotaNames = []string{"instances", "cores", "ram"}

// putQuotaSet is Nova's and Cinder's PUT os-quota-sets/{<key>}, an admin's
// only; names the service does not know are ignored, as they do.
func (s *Server) putQuotaSet(key, policy string, names func() []string) handler {
	return func(w http.ResponseWriter, r *http.Request, c *caller) *apiErr {
		if !c.admin {
			return novaErr(http.StatusForbidden, "Policy doesn't allow "+policy+" to be performed.")
		}
		var in struct {
			QuotaSet map[string]any `json:"quota_set"`
		}
		if e := simkit.Decode(r, &in, novaBad); e != nil {
			return e
		}
		p, out := r.PathValue(key), obj{}
		for _, n := range names() {
			if v, ok := in.QuotaSet[n].(float64); ok {
				s.setQuota(p, n, int(v))
			}
			out[n] = s.limit(p, n)
		}
		simkit.WriteJSON(w, http.StatusOK, obj{"quota_set": out})
		return nil
	}
}

// cinderQuotaNames are the project's Cinder quota names: volumes,
// gigabytes and one gigabytes_<type> per volume type.
func (s *Server) cinderQuotaNames() []string {
	return append([]string{"volumes", "gigabytes"},
		simkit.Map(s.opts.VolumeTypes, func(t VolumeType) string { return "gigabytes_" + t.Name })...)
}

// checkCinderQuota is Cinder's 413 overLimit for one more volume of size
// GiB and type typeName in project.
func (s *Server) checkCinderQuota(project, typeName string, size int) *apiErr {
	if n, _, l := s.overQuota(project, []string{"volumes"}, 1); n != "" {
		return novaErr(http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"VolumeLimitExceeded: Maximum number of volumes allowed (%d) exceeded for quota 'volumes'.", l))
	}
	if n, used, l := s.overQuota(project, []string{"gigabytes", "gigabytes_" + typeName}, size, size); n != "" {
		return novaErr(http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed %s quota. Requested %dG, quota is %dG and %dG has been consumed.",
			n, size, l, used))
	}
	return nil
}

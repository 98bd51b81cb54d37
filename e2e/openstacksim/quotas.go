package openstacksim

import (
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

// neutronUsage counts what a project holds of each Neutron resource.
var neutronUsage = map[string]func(s *Server, project string) int{
	"network": networks.CountOwned, "subnet": subnets.CountOwned, "port": ports.CountOwned,
	"router": routers.CountOwned, "floatingip": floatingIPs.CountOwned, "security_group": secGroups.CountOwned,
	"security_group_rule": rules.CountOwned,
}

// checkNeutronQuota answers Neutron's 409 OverQuota when project cannot
// have add more of resource.
func (s *Server) checkNeutronQuota(project, resource string, add int) *apiErr {
	l := s.limit(project, resource)
	if l >= 0 && neutronUsage[resource](s, project)+add > l {
		return neutronErr(http.StatusConflict, "OverQuota", "Quota exceeded for resources: ['"+resource+"'].")
	}
	return nil
}

// checkNovaQuota is Nova's 403 "Quota exceeded" for one more server of f.
func (s *Server) checkNovaQuota(project string, f *Flavor) *apiErr {
	used := map[string]int{}
	for _, sv := range s.st.servers {
		if sv.ProjectID != project {
			continue
		}
		used["instances"]++
		if g := s.flavor(sv.FlavorID); g != nil {
			used["cores"] += g.VCPUs
			used["ram"] += g.RAM
		}
	}
	for _, c := range []struct {
		name string
		req  int
	}{{"instances", 1}, {"cores", f.VCPUs}, {"ram", f.RAM}} {
		if l := s.limit(project, c.name); l >= 0 && used[c.name]+c.req > l {
			return novaErr(http.StatusForbidden, fmt.Sprintf("Quota exceeded for %s: Requested %d, but already used %d of %d %s",
				c.name, c.req, used[c.name], l, c.name))
		}
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
	names := []string{"volumes", "gigabytes"}
	for _, t := range s.opts.VolumeTypes {
		names = append(names, "gigabytes_"+t.Name)
	}
	return names
}

// checkCinderQuota is Cinder's 413 overLimit for one more volume of size
// GiB and type typeName in project.
func (s *Server) checkCinderQuota(project, typeName string, size int) *apiErr {
	count, total, ofType := 0, 0, 0
	for _, v := range s.st.volumes {
		if v.ProjectID != project {
			continue
		}
		count++
		total += v.Size
		if v.VolumeType == typeName {
			ofType += v.Size
		}
	}
	if l := s.limit(project, "volumes"); l >= 0 && count+1 > l {
		return novaErr(http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"VolumeLimitExceeded: Maximum number of volumes allowed (%d) exceeded for quota 'volumes'.", l))
	}
	for _, c := range []struct {
		name string
		used int
	}{{"gigabytes", total}, {"gigabytes_" + typeName, ofType}} {
		if l := s.limit(project, c.name); l >= 0 && c.used+size > l {
			return novaErr(http.StatusRequestEntityTooLarge, fmt.Sprintf(
				"VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed %s quota. Requested %dG, quota is %dG and %dG has been consumed.",
				c.name, size, l, c.used))
		}
	}
	return nil
}

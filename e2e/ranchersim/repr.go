package ranchersim

import (
	"net/url"
	"time"
)

// Representations are maps, not structs: collection filters match on the
// fields of what is written, as norman's do.

func timestamps(m map[string]any, t time.Time) {
	m["created"] = t.UTC().Format(time.RFC3339)
	m["createdTS"] = t.UnixMilli()
}

func active(m map[string]any) {
	m["state"] = "active"
	m["transitioning"] = "no"
	m["transitioningMessage"] = ""
}

func (s *Server) clusterRep(b string) map[string]any {
	self := b + "/v3/clusters/" + s.opts.ClusterID
	m := map[string]any{
		"id": s.opts.ClusterID, "type": "cluster", "baseType": "cluster",
		"name": s.opts.ClusterName, "description": "", "uuid": "",
		"internal": false, "driver": "imported", "provider": "rke2",
		"annotations": map[string]string{}, "labels": map[string]string{"provider.cattle.io": "rke2"},
		"links": map[string]string{
			"self": self, "namespaces": self + "/namespaces",
			"projects":  b + "/v3/projects?clusterId=" + url.QueryEscape(s.opts.ClusterID),
			"subscribe": self + "/subscribe",
		},
		"actions": map[string]string{
			"importYaml":         self + "?action=importYaml",
			"generateKubeconfig": self + "?action=generateKubeconfig",
		},
	}
	timestamps(m, s.created)
	active(m)
	return m
}

func projectRep(b string, p *project) map[string]any {
	self := b + "/v3/projects/" + p.id
	m := map[string]any{
		"id": p.id, "type": "project", "baseType": "project",
		"name": p.name, "description": p.description, "clusterId": p.clusterID,
		"namespaceId": nil, "creatorId": p.creatorID, "uuid": p.uuid,
		"annotations": cloneMap(p.annotations), "labels": cloneMap(p.labels),
		"resourceQuota": p.resourceQuota, "namespaceDefaultResourceQuota": p.nsDefaultQuota,
		"containerDefaultResourceLimit": p.containerLimit,
		"links": map[string]string{
			"self": self, "update": self, "remove": self,
			"projectRoleTemplateBindings": self + "/projectroletemplatebindings",
			"cluster":                     b + "/v3/clusters/" + p.clusterID,
		},
		"actions": map[string]string{"exportYaml": self + "?action=exportYaml"},
	}
	timestamps(m, p.created)
	active(m)
	return m
}

// nullable writes "" as null, as norman does for unset references.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func bindingRep(b string, pb *binding) map[string]any {
	self := b + "/v3/projectRoleTemplateBindings/" + pb.id
	m := map[string]any{
		"id": pb.id, "name": pb.name, "type": "projectRoleTemplateBinding", "baseType": "projectRoleTemplateBinding",
		"projectId": pb.projectID, "roleTemplateId": pb.roleTemplateID,
		"userId": nullable(pb.userID), "userPrincipalId": nullable(pb.userPrincipalID),
		"groupId": nullable(pb.groupID), "groupPrincipalId": nullable(pb.groupPrincipalID),
		"serviceAccount": pb.serviceAccount, "namespaceId": nil,
		"creatorId": pb.creatorID, "uuid": pb.uuid,
		"annotations": cloneMap(pb.annotations), "labels": cloneMap(pb.labels),
		"links": map[string]string{
			"self": self, "update": self, "remove": self,
			"project":      b + "/v3/projects/" + pb.projectID,
			"roleTemplate": b + "/v3/roleTemplates/" + pb.roleTemplateID,
		},
		"actions": map[string]string{},
	}
	timestamps(m, pb.created)
	active(m)
	return m
}

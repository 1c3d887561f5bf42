package aggregate

import (
	"cmp"
	"slices"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
)

// Severity of Serve application statuses: the fleet shows each application as its worst copy,
// so that one failing cluster is not hidden by healthy ones. Failed beats transitional beats
// running; within a group the order only makes the choice deterministic. A status Ray adds
// later (unknownSeverity) ranks just above the healthy one: not known healthy, not known failed.
var appSeverity = map[string]int{
	rayv1.ApplicationStatusEnum.DEPLOY_FAILED: 6,
	rayv1.ApplicationStatusEnum.UNHEALTHY:     5,
	rayv1.ApplicationStatusEnum.DEPLOYING:     4,
	rayv1.ApplicationStatusEnum.NOT_STARTED:   3,
	rayv1.ApplicationStatusEnum.DELETING:      2,
	rayv1.ApplicationStatusEnum.RUNNING:       0,
}

// deploymentSeverity orders Serve deployment statuses the same way. Newer Ray versions report
// more transitional states (UPSCALING, DOWNSCALING), which rank as unknown, and DEPLOY_FAILED.
var deploymentSeverity = map[string]int{
	"DEPLOY_FAILED":                      4,
	rayv1.DeploymentStatusEnum.UNHEALTHY: 3,
	rayv1.DeploymentStatusEnum.UPDATING:  2,
	rayv1.DeploymentStatusEnum.HEALTHY:   0,
}

// unknownSeverity is the rank of a status missing from the tables: above healthy, below any
// known trouble.
const unknownSeverity = 1

// noStatus stands in a message for a copy that reports no status at all.
const noStatus = "no status"

// healthy reports whether a status is the healthy one (RUNNING, HEALTHY), which messages omit.
func healthy(severity map[string]int, status string) bool {
	s, ok := severity[status]
	return ok && s == 0
}

// rank returns a status's severity.
func rank(severity map[string]int, status string) int {
	if s, ok := severity[status]; ok {
		return s
	}
	return unknownSeverity
}

// copyOf is one cluster's copy of an application or deployment.
type copyOf struct {
	cluster, status, message string
}

// merged returns the worst status of copies and a message naming every cluster whose copy is
// not healthy, worst first, then by cluster name: "m2: DEPLOY_FAILED (boom); m3: DEPLOYING".
func merged(severity map[string]int, copies []copyOf) (status, message string) {
	slices.SortStableFunc(copies, func(a, b copyOf) int {
		return cmp.Or(cmp.Compare(rank(severity, b.status), rank(severity, a.status)), cmp.Compare(a.cluster, b.cluster))
	})
	var parts []string
	for _, c := range copies {
		if healthy(severity, c.status) {
			continue
		}
		status := c.status
		if status == "" {
			status = noStatus
		}
		p := c.cluster + ": " + status
		if c.message != "" {
			p += " (" + c.message + ")"
		}
		parts = append(parts, p)
	}
	return copies[0].status, conditions.Truncate(strings.Join(parts, "; "))
}

// mergeApplications merges the applications of the clusters' entries by name: each merged
// application has the worst status of its copies and each of its deployments the worst status
// of theirs. An application missing from a cluster adds nothing: the cluster's Ready condition
// already says whether it serves.
func mergeApplications(entries []*fleetv1alpha1.ClusterStatus) map[string]rayv1.AppStatus {
	apps := map[string][]copyOf{}
	deployments := map[string]map[string][]copyOf{}
	for _, e := range entries {
		for name, app := range e.Applications {
			apps[name] = append(apps[name], copyOf{e.Name, app.Status, app.Message})
			for dname, d := range app.Deployments {
				if deployments[name] == nil {
					deployments[name] = map[string][]copyOf{}
				}
				deployments[name][dname] = append(deployments[name][dname], copyOf{e.Name, d.Status, d.Message})
			}
		}
	}
	if len(apps) == 0 {
		return nil
	}
	out := make(map[string]rayv1.AppStatus, len(apps))
	for name, copies := range apps {
		var app rayv1.AppStatus
		app.Status, app.Message = merged(appSeverity, copies)
		for dname, dcopies := range deployments[name] {
			if app.Deployments == nil {
				app.Deployments = map[string]rayv1.ServeDeploymentStatus{}
			}
			var d rayv1.ServeDeploymentStatus
			d.Status, d.Message = merged(deploymentSeverity, dcopies)
			app.Deployments[dname] = d
		}
		out[name] = app
	}
	return out
}

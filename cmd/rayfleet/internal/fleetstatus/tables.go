package fleetstatus

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Values shown where a column has nothing to show.
const (
	none = "-"
	// statusPending: the cluster is chosen but its copy is not running yet (or not seen yet).
	statusPending = "Pending"
	// revisionApplying: the member has not yet observed the spec the hub applied there.
	revisionApplying = "(applying)"
	// statusRemoving: the cluster is no longer chosen but its copy still runs.
	statusRemoving = "Removing"
	// clusterNone marks a RayService placed nowhere; its status column shows why.
	clusterNone = "<none>"
)

// shortHashLength is enough to tell spec revisions apart at a glance, like a short Git hash.
const shortHashLength = 8

// Write prints the RayService table and the member table, separated by a blank line; now is
// the time heartbeat ages are measured against. wide adds the columns of -o wide: why a copy
// or a member is (not) Ready, the policy, and the member's versions and Nodes.
func Write(w io.Writer, f *Fleet, now time.Time, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	header := "RAYSERVICE\tCLUSTER\tSTATUS\tREADY\tENDPOINTS\tREVISION"
	if wide {
		header += "\tREASON\tPOLICY"
	}
	fmt.Fprintln(tw, header)
	for _, b := range sortedBindings(f.Bindings) {
		for _, row := range bindingRows(&b, wide) {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the RayService table: %w", err)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	header = "MEMBER\tREADY\tFREE GPUS\tFREE CPU\tHEARTBEAT"
	if wide {
		header += "\tREASON\tNODES\tKUBERNETES\tAGENT"
	}
	fmt.Fprintln(tw, header)
	for _, m := range sortedMembers(f.Members) {
		row := memberRow(&m, now)
		if wide {
			row = append(row, memberWide(&m)...)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the member table: %w", err)
	}
	return nil
}

// bindingRows are one row per cluster the RayService is placed on or still runs on, by cluster
// name; a RayService placed nowhere gets one row saying why.
func bindingRows(b *fleetv1alpha1.RayServiceBinding, wide bool) [][]string {
	rows := narrowBindingRows(b)
	if !wide {
		return rows
	}
	seen := make(map[string]*fleetv1alpha1.ClusterStatus, len(b.Status.Clusters))
	for i := range b.Status.Clusters {
		seen[b.Status.Clusters[i].Name] = &b.Status.Clusters[i]
	}
	policy := orNone(b.Spec.PolicyName)
	for i, row := range rows {
		reason := none
		if cs := seen[row[1]]; cs != nil {
			reason = conditionReason(cs.Conditions, fleetv1alpha1.ConditionReady)
		} else if row[1] == clusterNone {
			reason = conditionReason(b.Status.Conditions, fleetv1alpha1.ConditionPlaced)
		}
		rows[i] = append(row, reason, policy)
	}
	return rows
}

// narrowBindingRows are bindingRows' default columns.
func narrowBindingRows(b *fleetv1alpha1.RayServiceBinding) [][]string {
	key := b.Namespace + "/" + b.Name
	seen := make(map[string]*fleetv1alpha1.ClusterStatus, len(b.Status.Clusters))
	names := slices.Clone(b.Spec.Clusters)
	for i := range b.Status.Clusters {
		cs := &b.Status.Clusters[i]
		seen[cs.Name] = cs
		if !slices.Contains(names, cs.Name) {
			names = append(names, cs.Name)
		}
	}
	if len(names) == 0 {
		status := none
		if c := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionPlaced); c != nil {
			status = c.Reason
		}
		return [][]string{{key, clusterNone, status, none, none, none}}
	}
	slices.Sort(names)
	rows := make([][]string, 0, len(names))
	for _, name := range names {
		rows = append(rows, clusterRow(key, name, slices.Contains(b.Spec.Clusters, name), seen[name]))
	}
	return rows
}

// clusterRow is one RayService copy; cs is nil until the hub has seen the copy.
func clusterRow(key, cluster string, chosen bool, cs *fleetv1alpha1.ClusterStatus) []string {
	status := statusPending
	if !chosen {
		status = statusRemoving
	}
	if cs == nil {
		return []string{key, cluster, status, none, none, none}
	}
	if chosen && cs.ServiceStatus != "" {
		status = string(cs.ServiceStatus)
	}
	ready := none
	if c := meta.FindStatusCondition(cs.Conditions, fleetv1alpha1.ConditionReady); c != nil {
		ready = string(c.Status)
	}
	// The hub sets the entry's spec hash only once the member has observed the spec the hub
	// last applied there (this cluster's overrides included), so an empty one on a copy the hub
	// has seen is a copy still catching up: what a user looks for during a rollout. Comparing
	// with the binding's hash instead would flag every cluster with overrides forever.
	revision := revisionApplying
	if cs.SpecHash != "" {
		revision = shortHash(cs.SpecHash)
	}
	return []string{key, cluster, status, ready, fmt.Sprint(cs.NumServeEndpoints), revision}
}

// memberRow is one member: its Ready condition, free accelerators by resource name, free CPU
// and the age of its last heartbeat.
func memberRow(m *fleetv1alpha1.MemberCluster, now time.Time) []string {
	ready := none
	if c := meta.FindStatusCondition(m.Status.Conditions, fleetv1alpha1.ConditionReady); c != nil {
		ready = string(c.Status)
	}
	gpus, cpu := none, none
	if m.Status.Capacity != nil {
		gpus = accelerators(m.Status.Capacity.Free)
		if q, ok := m.Status.Capacity.Free[corev1.ResourceCPU]; ok {
			cpu = q.String()
		}
	}
	heartbeat := none
	// The hub's clock, as the CLI's: a member's own clock may be off.
	if t := m.Status.LastHeartbeatObservedTime; t != nil {
		heartbeat = duration.HumanDuration(now.Sub(t.Time)) + " ago"
	}
	return []string{m.Name, ready, gpus, cpu, heartbeat}
}

// memberWide is a member's -o wide columns: why it is (not) Ready, its Nodes Ready of all, and
// the Kubernetes and spoke versions it reports.
func memberWide(m *fleetv1alpha1.MemberCluster) []string {
	nodes := none
	if n := m.Status.Nodes; n != nil {
		nodes = fmt.Sprintf("%d/%d", n.Ready, n.Total)
	}
	return []string{conditionReason(m.Status.Conditions, fleetv1alpha1.ConditionReady), nodes,
		orNone(m.Status.KubernetesVersion), orNone(m.Status.AgentVersion)}
}

// conditionReason is the reason of the condition of type t, none when it is not set.
func conditionReason(conds []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conds, t); c != nil && c.Reason != "" {
		return c.Reason
	}
	return none
}

// orNone is s, or none when it is empty.
func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

// accelerators lists the extended resources (GPUs, TPUs, ...) of free as name=quantity, sorted
// by name. Extended resources are the domain-prefixed names outside kubernetes.io, the same
// rule the scheduler uses.
func accelerators(free corev1.ResourceList) string {
	var parts []string
	for name, q := range free {
		n := string(name)
		if !strings.Contains(n, "/") || strings.HasPrefix(n, corev1.ResourceDefaultNamespacePrefix) ||
			strings.HasPrefix(n, corev1.DefaultResourceRequestsPrefix) {
			continue
		}
		parts = append(parts, n+"="+q.String())
	}
	if len(parts) == 0 {
		return none
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// shortHash is the first shortHashLength characters of a spec hash.
func shortHash(h string) string {
	if len(h) <= shortHashLength {
		return h
	}
	return h[:shortHashLength]
}

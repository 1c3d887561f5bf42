// Package benchutil holds what the spoke's benchmarks share: counting a client's API writes in
// the API server's audit log, scraping the spoke's and the API server's Prometheus metrics,
// waiting for quiet, and duration statistics.
// Only the benchmarks import it; of the repository it imports only shared/localfleet, never
// hub/, spoke/ or cmd/.
package benchutil

import (
	"fmt"
	"sort"
	"time"

	"github.com/rayfleet/rayfleet/shared/localfleet/auditlog"
)

// AuditPolicy records every write made by user and nothing else, at level (Metadata is enough
// to count; Request adds the bodies, for finding out why a write was made): a benchmark counts
// exactly the spoke's writes without slowing down anyone else's requests.
func AuditPolicy(user, level string) string {
	return fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: %s
  users: [%q]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`, level, user)
}

// WriteKey is a resource (with subresource) and verb, e.g. "rayclusters/status update".
type WriteKey struct {
	Resource string
	Verb     string
}

// WriteCounts tallies one client's completed writes.
type WriteCounts struct {
	// ByKey counts the writes per resource and verb.
	ByKey map[WriteKey]int
	// Total counts every completed write, BeforeSplit those completed at or before the split time
	// (for instance the moment all objects were ready).
	Total, BeforeSplit int
	// Status counts writes to any status subresource.
	Status int
	// Conflicts counts 409 answers; Failed counts any other non-2xx answer.
	Conflicts, Failed int
	// Failures tallies the non-2xx answers by "resource verb code".
	Failures map[string]int
}

// Window bounds the audit events counted by the time they completed: From exclusive, To
// inclusive; a zero time leaves that end open.
type Window struct {
	From, To time.Time
}

func (w Window) contains(t time.Time) bool {
	return (w.From.IsZero() || t.After(w.From)) && (w.To.IsZero() || !t.After(w.To))
}

// CountWrites reads the JSON-lines audit log at path and tallies user's writes completed inside
// window; split divides them into before and after a moment of interest.
func CountWrites(path, user string, window Window, split time.Time) (WriteCounts, error) {
	wc := WriteCounts{ByKey: map[WriteKey]int{}, Failures: map[string]int{}}
	err := auditlog.Read(path, false, func(ev auditlog.Event) {
		if ev.Completed() && ev.User.Username == user && window.contains(ev.StageTimestamp) {
			wc.add(ev, split)
		}
	})
	return wc, err
}

func (wc *WriteCounts) add(ev auditlog.Event, split time.Time) {
	resource := ev.ObjectRef.Resource
	if ev.ObjectRef.Subresource != "" {
		resource += "/" + ev.ObjectRef.Subresource
		if ev.ObjectRef.Subresource == "status" {
			wc.Status++
		}
	}
	wc.ByKey[WriteKey{Resource: resource, Verb: ev.Verb}]++
	wc.Total++
	if !ev.StageTimestamp.After(split) {
		wc.BeforeSplit++
	}
	if ev.ResponseStatus == nil {
		return
	}
	code := ev.ResponseStatus.Code
	if code >= 300 {
		wc.Failures[fmt.Sprintf("%s %s %d", resource, ev.Verb, code)]++
	}
	switch {
	case code == 409:
		wc.Conflicts++
	case code >= 300:
		wc.Failed++
	}
}

// SortedKeys orders the tally by count, largest first, then by name.
func (wc WriteCounts) SortedKeys() []WriteKey {
	keys := make([]WriteKey, 0, len(wc.ByKey))
	for k := range wc.ByKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if wc.ByKey[keys[i]] != wc.ByKey[keys[j]] {
			return wc.ByKey[keys[i]] > wc.ByKey[keys[j]]
		}
		if keys[i].Resource != keys[j].Resource {
			return keys[i].Resource < keys[j].Resource
		}
		return keys[i].Verb < keys[j].Verb
	})
	return keys
}

// SortedFailures returns the keys of Failures in order.
func (wc WriteCounts) SortedFailures() []string {
	out := make([]string, 0, len(wc.Failures))
	for k := range wc.Failures {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"
)

// auditPolicy records every write made by user and nothing else, at level (Metadata is enough
// to count; Request adds the bodies, for finding out why a write was made): the benchmark
// counts exactly the spoke's writes without slowing down anyone else's requests.
func auditPolicy(user, level string) string {
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

// auditEvent is the part of an audit.k8s.io/v1 Event the benchmark reads.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp time.Time `json:"stageTimestamp"`
}

// writeKey is a resource (with subresource) and verb, e.g. "rayclusters/status update".
type writeKey struct {
	Resource string
	Verb     string
}

// writeCounts tallies one client's completed writes.
type writeCounts struct {
	ByKey map[writeKey]int
	// Total counts every completed write, BeforeReady those completed before all clusters were ready.
	Total, BeforeReady int
	// Status counts writes to any status subresource.
	Status int
	// Conflicts counts 409 answers; Failed counts any other non-2xx answer.
	Conflicts, Failed int
	// Failures tallies the non-2xx answers by "resource verb code".
	Failures map[string]int
}

// countWrites reads the JSON-lines audit log at path and tallies user's completed writes;
// readyAt splits them into before and after all clusters were ready.
func countWrites(path, user string, readyAt time.Time) (writeCounts, error) {
	wc := writeCounts{ByKey: map[writeKey]int{}, Failures: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		return wc, fmt.Errorf("opening audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return wc, fmt.Errorf("parsing audit event: %w", err)
		}
		if ev.Stage != "ResponseComplete" || ev.User.Username != user || ev.ObjectRef == nil {
			continue
		}
		resource := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			resource += "/" + ev.ObjectRef.Subresource
			if ev.ObjectRef.Subresource == "status" {
				wc.Status++
			}
		}
		wc.ByKey[writeKey{Resource: resource, Verb: ev.Verb}]++
		wc.Total++
		if !ev.StageTimestamp.After(readyAt) {
			wc.BeforeReady++
		}
		if ev.ResponseStatus != nil {
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
	}
	if err := sc.Err(); err != nil {
		return wc, fmt.Errorf("reading audit log: %w", err)
	}
	return wc, nil
}

// sortedKeys orders the tally by count, largest first, then by name.
func (wc writeCounts) sortedKeys() []writeKey {
	keys := make([]writeKey, 0, len(wc.ByKey))
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

package benchutil

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// AuditPolicyVerbs records the requests of user with the given verbs and nothing else, at
// level: a benchmark that counts a client's reads as well as its writes (every verb but watch,
// whose audit event only completes when the watch ends) passes them here.
func AuditPolicyVerbs(user, level string, verbs ...string) string {
	quoted := make([]string, len(verbs))
	for i, v := range verbs {
		quoted[i] = fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: %s
  users: [%q]
  verbs: [%s]
- level: None
`, level, user, strings.Join(quoted, ", "))
}

// ReadVerbs and WriteVerbs are the verbs a benchmark counting a client's API calls records
// (AuditPolicyVerbs) and tells apart.
var (
	ReadVerbs  = []string{"get", "list"}
	WriteVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}
)

// IsWrite reports whether verb is one of WriteVerbs.
func IsWrite(verb string) bool { return slices.Contains(WriteVerbs, verb) }

// auditTail reads the events appended to an audit log since it last looked.
type auditTail struct {
	f      *os.File
	r      *bufio.Reader
	buffer []byte
}

func openTail(path string) (*auditTail, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("seeking audit log: %w", err)
	}
	return &auditTail{f: f, r: bufio.NewReaderSize(f, 1<<20)}, nil
}

// next calls fn for every complete event appended since the last call; a line still being
// written is kept for the next call.
func (t *auditTail) next(fn func(auditEvent)) error {
	for {
		chunk, err := t.r.ReadBytes('\n')
		t.buffer = append(t.buffer, chunk...)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading audit log: %w", err)
		}
		var ev auditEvent
		if jerr := json.Unmarshal(t.buffer, &ev); jerr == nil {
			fn(ev)
		}
		t.buffer = t.buffer[:0]
	}
}

// WaitQuietFor waits until user has made no request to any of resources (e.g.
// "rayservices/status") for quiet, as the audit logs at paths record it from the moment of the
// call, bounded by limit: unlike WaitQuiet it sees through the requests a client makes on a
// timer whatever the objects of interest do (heartbeats, leases, probes).
func WaitQuietFor(ctx context.Context, paths []string, user string, resources []string, quiet, limit time.Duration) error {
	tails := make([]*auditTail, 0, len(paths))
	defer func() {
		for _, t := range tails {
			_ = t.f.Close()
		}
	}()
	for _, p := range paths {
		t, err := openTail(p)
		if err != nil {
			return err
		}
		tails = append(tails, t)
	}
	deadline := time.Now().Add(limit)
	lastChange := time.Now()
	ticker := time.NewTicker(settlePoll)
	defer ticker.Stop()
	for {
		for _, t := range tails {
			err := t.next(func(ev auditEvent) {
				if ev.User.Username != user || ev.ObjectRef == nil {
					return
				}
				res := ev.ObjectRef.Resource
				if ev.ObjectRef.Subresource != "" {
					res += "/" + ev.ObjectRef.Subresource
				}
				if slices.Contains(resources, res) {
					lastChange = time.Now()
				}
			})
			if err != nil {
				return err
			}
		}
		if time.Since(lastChange) >= quiet || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

// CountWritesIn is CountWrites over several windows in one pass of the log, for long logs: the
// i-th tally counts user's events completed inside windows[i] (BeforeSplit is left 0). Despite
// the name it counts every request the audit policy recorded, reads included when the policy
// records them (AuditPolicyVerbs); the keys tell the verbs apart.
func CountWritesIn(path, user string, windows []Window) ([]WriteCounts, error) {
	out := make([]WriteCounts, len(windows))
	for i := range out {
		out[i] = WriteCounts{ByKey: map[WriteKey]int{}, Failures: map[string]int{}}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("parsing audit event: %w", err)
		}
		if ev.Stage != "ResponseComplete" || ev.User.Username != user || ev.ObjectRef == nil {
			continue
		}
		for i, w := range windows {
			if w.contains(ev.StageTimestamp) {
				out[i].add(ev, time.Time{})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	return out, nil
}

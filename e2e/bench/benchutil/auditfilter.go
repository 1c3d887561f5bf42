package benchutil

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rayfleet/rayfleet/shared/localfleet/auditlog"
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

// auditTail reads the events appended to an audit log since it last looked, following the
// API server's rotation of the log (see AuditLogFiles) to the new file.
type auditTail struct {
	path   string
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
	return &auditTail{path: path, f: f, r: bufio.NewReaderSize(f, 1<<20)}, nil
}

// rotated reports whether the log at t.path is another file than the one being read, and if
// so reads on from the new file's beginning.
func (t *auditTail) rotated() (bool, error) {
	now, err := os.Stat(t.path)
	if err != nil {
		return false, nil //nolint:nilerr // between the rename and the new file: look again later
	}
	cur, err := t.f.Stat()
	if err != nil {
		return false, fmt.Errorf("audit log: %w", err)
	}
	if os.SameFile(now, cur) {
		return false, nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		return false, fmt.Errorf("opening rotated audit log: %w", err)
	}
	_ = t.f.Close()
	t.f, t.r, t.buffer = f, bufio.NewReaderSize(f, 1<<20), t.buffer[:0]
	return true, nil
}

// next calls fn for every complete event appended since the last call; a line still being
// written is kept for the next call.
func (t *auditTail) next(fn func(auditlog.Event)) error {
	for {
		chunk, err := t.r.ReadBytes('\n')
		t.buffer = append(t.buffer, chunk...)
		if err == io.EOF {
			// The old file is read to its end before the new one is opened.
			if again, rerr := t.rotated(); rerr != nil || !again {
				return rerr
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("reading audit log: %w", err)
		}
		if ev, jerr := auditlog.Parse(t.buffer); jerr == nil {
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
			err := t.next(func(ev auditlog.Event) {
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

// AuditLogFiles returns the audit log at path and the files the API server rotated it into
// (audit-<time>.log next to it, every 100 MB by default), oldest first: a long benchmark's
// events are in all of them.
func AuditLogFiles(path string) ([]string, error) {
	ext := filepath.Ext(path)
	rotated, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return nil, fmt.Errorf("listing rotated audit logs: %w", err)
	}
	// The rotated names carry their time in a sortable form.
	sort.Strings(rotated)
	return append(rotated, path), nil
}

// CountWritesIn is CountWrites over several windows in one pass of the log and of the files it
// was rotated into (AuditLogFiles), for long logs: the i-th tally counts user's events
// completed inside windows[i] (BeforeSplit is left 0). Despite the name it counts every request
// the audit policy recorded, reads included when the policy records them (AuditPolicyVerbs);
// the keys tell the verbs apart.
func CountWritesIn(path, user string, windows []Window) ([]WriteCounts, error) {
	out := make([]WriteCounts, len(windows))
	for i := range out {
		out[i] = WriteCounts{ByKey: map[WriteKey]int{}, Failures: map[string]int{}}
	}
	files, err := AuditLogFiles(path)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := countFileIn(f, user, windows, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// countFileIn adds the events of one audit log file to out, by window.
func countFileIn(path, user string, windows []Window, out []WriteCounts) error {
	return auditlog.Read(path, false, func(ev auditlog.Event) {
		if !ev.Completed() || ev.User.Username != user {
			return
		}
		for i, w := range windows {
			if w.contains(ev.StageTimestamp) {
				out[i].add(ev, time.Time{})
			}
		}
	})
}

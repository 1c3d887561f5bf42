// Package auditlog reads the JSON-lines audit logs of the local control planes
// (localcluster's Options.AuditPolicy and Cluster.AuditLogPath): the few fields of each event
// that the e2e tests and the benchmarks count requests by.
package auditlog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// maxLine bounds one event's line: an event at level Request carries the request's body.
const maxLine = 16 << 20

// Event is the part of an audit.k8s.io/v1 Event read here.
type Event struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef      *ObjectRef `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

// ObjectRef is the object a request was about.
type ObjectRef struct {
	Resource    string `json:"resource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Subresource string `json:"subresource"`
}

// Parse decodes one line of an audit log.
func Parse(line []byte) (Event, error) {
	var ev Event
	err := json.Unmarshal(line, &ev)
	return ev, err
}

// Completed reports whether ev is the answer to a request about an object: its
// ResponseComplete stage, with an objectRef.
func (ev Event) Completed() bool { return ev.Stage == "ResponseComplete" && ev.ObjectRef != nil }

// Code is the answer's status code, 0 when the event has none.
func (ev Event) Code() int {
	if ev.ResponseStatus == nil {
		return 0
	}
	return ev.ResponseStatus.Code
}

// Read calls each for every event of the audit log at path, in order. A line that does not
// parse is an error, unless skipTorn: an API server stopped mid-write leaves a torn line, and
// the restarted one appends after it.
func Read(path string, skipTorn bool, each func(Event)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		ev, err := Parse(sc.Bytes())
		if err != nil {
			if skipTorn {
				continue
			}
			return fmt.Errorf("parsing audit event in %s: %w", path, err)
		}
		each(ev)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading audit log %s: %w", path, err)
	}
	return nil
}

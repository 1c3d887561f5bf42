//go:build e2e

package chaos

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/hubpolicy"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/auditlog"
)

// memberWrite is one write a member's audit log recorded (memberAuditPolicy: RayServices,
// RayClusters and Pods, status included), as far as the member-fault scenarios read it.
type memberWrite struct {
	Member      string
	At          time.Time
	User        string
	Verb        string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	Code        int
}

// String names the write for failure messages.
func (w memberWrite) String() string {
	res := w.Resource
	if w.Subresource != "" {
		res += "/" + w.Subresource
	}
	return fmt.Sprintf("%s %s: %s %s %s/%s (%d) at %s", w.Member, w.User, w.Verb, res, w.Namespace, w.Name, w.Code,
		w.At.Format(time.RFC3339Nano))
}

// status reports whether the write is of a status subresource.
func (w memberWrite) status() bool { return w.Subresource == "status" }

// hubOnMember is who the hub acts as on a member: the ServiceAccount `rayfleet join` makes.
var hubOnMember = hubpolicy.HubUsername(hubaccess.DefaultNamespace, hubaccess.ServiceAccountName)

// memberWrites reads the writes of every member received in [from, to), by the hub or the
// spokes only, in the order of the logs. A restarted API server appends to the same log.
func memberWrites(t *testing.T, f *localfleet.Fleet, from, to time.Time) []memberWrite {
	t.Helper()
	var out []memberWrite
	for _, member := range []string{memberUS, memberEU, memberAP} {
		out = append(out, readMemberWrites(t, member, f.Members[member].AuditLogPath(), from, to)...)
	}
	return out
}

// readMemberWrites reads one member's audit log; see memberWrites.
func readMemberWrites(t *testing.T, member, path string, from, to time.Time) []memberWrite {
	t.Helper()
	var out []memberWrite
	err := auditlog.Read(path, true, func(ev auditlog.Event) {
		at := ev.RequestReceivedTimestamp
		user := ev.User.Username
		if !ev.Completed() || at.Before(from) || !at.Before(to) || (user != hubOnMember && user != localfleet.SpokeUser) {
			return
		}
		out = append(out, memberWrite{Member: member, At: at, User: user, Verb: ev.Verb, Resource: ev.ObjectRef.Resource,
			Subresource: ev.ObjectRef.Subresource, Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name, Code: ev.Code()})
	})
	if err != nil {
		t.Fatalf("the audit log of %s: %v", member, err)
	}
	return out
}

// writeTally counts writes by writer (the hub, the spokes) and kind (spec: anything but a
// status subresource, deletes included; status).
type writeTally struct {
	HubSpec, HubStatus, SpokeSpec, SpokeStatus int
	// hubSpec are the hub's spec writes themselves, for failure messages.
	hubSpec []memberWrite
}

// tallyMemberWrites counts writes.
func tallyMemberWrites(writes []memberWrite) writeTally {
	var c writeTally
	for _, w := range writes {
		switch {
		case w.User == hubOnMember && w.status():
			c.HubStatus++
		case w.User == hubOnMember:
			c.HubSpec++
			c.hubSpec = append(c.hubSpec, w)
		case w.status():
			c.SpokeStatus++
		default:
			c.SpokeSpec++
		}
	}
	return c
}

// String renders the tally as a figure.
func (c writeTally) String() string {
	return fmt.Sprintf("hub %d spec, %d status; spokes %d spec, %d status", c.HubSpec, c.HubStatus, c.SpokeSpec, c.SpokeStatus)
}

// firstMemberDelete is when the member's API server received the first accepted delete of
// resource ns/name by user, false when it received none.
func firstMemberDelete(writes []memberWrite, member, user, resource, ns, name string) (time.Time, bool) {
	i := slices.IndexFunc(writes, func(w memberWrite) bool {
		return w.Member == member && w.User == user && w.Verb == "delete" && w.Resource == resource &&
			w.Subresource == "" && w.Namespace == ns && w.Name == name && w.Code < 300
	})
	if i < 0 {
		return time.Time{}, false
	}
	return writes[i].At, true
}

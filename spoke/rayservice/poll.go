package rayservice

import (
	"context"
	"fmt"
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
)

// How often Serve applications are read. KubeRay reads them on every reconcile and reconciles
// every RayService every 2 s for good, 30 reads a minute whether anything happens or not. Here
// a RayService in which something is changing is still read at that pace, and a settled one only
// every defaultStablePoll: an application that fails is then reported within that time, for 6
// reads a minute.
const (
	// defaultChangingPoll is the pace of a RayService that is changing (KubeRay's requeue).
	defaultChangingPoll = requeueSoon
	// defaultStablePoll is the pace of a settled RayService.
	defaultStablePoll = 10 * time.Second
)

// ServePolls are the intervals at which the Serve applications of a RayService are read.
type ServePolls struct {
	// Changing applies while anything of the RayService changes (see pollPace): its
	// applications are read on every reconcile, and it is reconciled at least this often.
	// 0 means 2 s.
	Changing time.Duration
	// Stable applies to a settled RayService: Ready, every application RUNNING, no pending
	// cluster, no submission within the last changing interval. 0 means 10 s.
	Stable time.Duration
}

// withDefaults fills in the intervals left at 0.
func (p ServePolls) withDefaults() ServePolls {
	if p.Changing <= 0 {
		p.Changing = defaultChangingPoll
	}
	if p.Stable <= 0 {
		p.Stable = defaultStablePoll
	}
	return p
}

// pollFacts are what one reconcile saw that decides how soon the applications of a RayService
// are read again.
type pollFacts struct {
	// pending says the status names a pending cluster: an upgrade (incremental or not) or a
	// rollback is under way, or the first cluster is starting.
	pending bool
	// ready says the RayService is Ready (it has serve endpoints).
	ready bool
	// readFailed says the active cluster's dashboard could not be read, or refused the config.
	readFailed bool
	// running says every application of the active cluster was RUNNING when last read; false
	// when none was read.
	running bool
	// sinceSubmit is the time since a Serve config or target_capacity was last submitted for
	// the RayService; negative when nothing was (by this process).
	sinceSubmit time.Duration
}

// pollPace returns the interval until the next read of the applications and, when it is the
// changing pace, why. A config counts as just submitted for one changing interval: the read in
// the reconcile that submits it came before the submission, and the next one, at the changing
// pace, reports the new config's applications.
func pollPace(f pollFacts, p ServePolls) (time.Duration, string) {
	switch {
	case f.pending:
		return p.Changing, "a pending cluster"
	case f.readFailed:
		return p.Changing, "the dashboard could not be read or refused the config"
	case !f.running:
		return p.Changing, "an application is not RUNNING, or none was read"
	case !f.ready:
		return p.Changing, "the RayService is not Ready"
	case f.sinceSubmit >= 0 && f.sinceSubmit < p.Changing:
		return p.Changing, fmt.Sprintf("a Serve config was submitted %s ago", f.sinceSubmit.Round(time.Second))
	default:
		return p.Stable, ""
	}
}

// pollRecord is what the reconciler remembers of one RayService's Serve reads between
// reconciles.
type pollRecord struct {
	// uid, generation and cluster are those of the RayService and its active cluster that
	// next was decided for; a change of any of them makes the next read due at once.
	uid        types.UID
	generation int64
	cluster    string
	// next is when the active cluster's applications are read again; zero means on every
	// reconcile (something is changing).
	next time.Time
	// submitted is when a config or a target_capacity was last submitted; zero when never.
	submitted time.Time
}

// readCanWait reports whether the read of rc, the active cluster of rs, can be skipped at now:
// the last reconcile found rs settled for this generation and this cluster, and the next read
// is not due yet.
func (p pollRecord) readCanWait(rs *rayv1.RayService, rc *rayv1.RayCluster, now time.Time) bool {
	return p.uid == rs.UID && p.generation == rs.Generation && p.cluster == rc.Name &&
		!p.next.IsZero() && now.Before(p.next)
}

// pollMemo holds the pollRecord of every RayService, by name. Safe for concurrent use.
type pollMemo struct {
	mu      sync.Mutex
	records map[types.NamespacedName]pollRecord
}

func newPollMemo() *pollMemo {
	return &pollMemo{records: map[types.NamespacedName]pollRecord{}}
}

// get returns the record of rs; a record of an earlier RayService of the same name is none.
func (m *pollMemo) get(rs *rayv1.RayService) pollRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.records[types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}]
	if rec.uid != rs.UID {
		return pollRecord{uid: rs.UID}
	}
	return rec
}

func (m *pollMemo) put(key types.NamespacedName, rec pollRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records[key] = rec
}

// noteSubmit records a submission to one of rs's clusters at now.
func (m *pollMemo) noteSubmit(rs *rayv1.RayService, now time.Time) {
	rec := m.get(rs)
	rec.submitted = now
	m.put(types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}, rec)
}

// forget drops the record of a deleted RayService.
func (m *pollMemo) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.records, key)
}

// serveRead is what became of the read of one cluster's applications in a reconcile.
type serveRead struct {
	// at is when the dashboard answered; zero when it was not asked.
	at time.Time
	// failed says the dashboard could not be read, or refused the config.
	failed bool
	// running says every application was RUNNING.
	running bool
	// skipped says the read was not due (the cluster was settled).
	skipped bool
}

// activeReadCanWait reports whether this reconcile can skip reading the applications of the
// active cluster: it was settled at its last read, the next read is not due, nothing changed
// since (generation, cluster, no pending cluster), and the config it last got is the spec's, so
// no submission can be due either. It is decided once per reconcile, so that the head Pod's
// label and the Serve phase agree.
func (r *Reconciler) activeReadCanWait(s *scope) bool {
	if s.activeCanWait != nil {
		return *s.activeCanWait
	}
	wait := false
	if s.active != nil && s.pending == nil {
		last, ok := r.configs.Get(s.key, s.active.Name)
		wait = ok && last.Config == s.rs.Spec.ServeConfigV2 &&
			r.polls.get(s.rs).readCanWait(s.rs, s.active, r.clock.Now())
	}
	s.activeCanWait = &wait
	return wait
}

// schedulePolls decides, from the status just computed (next), when the active cluster's
// applications are read again, remembers it, and returns how soon the RayService should be
// reconciled for it: the changing pace while anything changes, else when the next read is due.
func (r *Reconciler) schedulePolls(ctx context.Context, s *scope, next *rayv1.RayServiceStatuses) time.Duration {
	now := r.clock.Now()
	rec := r.polls.get(s.rs)
	active := next.ActiveServiceStatus.RayClusterName
	read := s.reads[active]
	facts := pollFacts{
		pending:     next.PendingServiceStatus.RayClusterName != "",
		ready:       meta.IsStatusConditionTrue(next.Conditions, string(rayv1.RayServiceReady)),
		readFailed:  read.failed,
		running:     active != "" && (read.running || read.skipped),
		sinceSubmit: -1,
	}
	if !rec.submitted.IsZero() {
		facts.sinceSubmit = now.Sub(rec.submitted)
	}
	pace, why := pollPace(facts, r.opts.ServePolls)
	keepNext := read.skipped && rec.cluster == active && rec.generation == s.rs.Generation
	rec.generation, rec.cluster = s.rs.Generation, active
	switch {
	case why != "" || (!keepNext && read.at.IsZero()):
		rec.next = time.Time{}
	case !keepNext:
		rec.next = read.at.Add(pace)
	}
	r.polls.put(s.key, rec)
	if why != "" {
		ctrl.LoggerFrom(ctx).V(2).Info("Serve applications read at the changing pace", "why", why)
		return pace
	}
	return clampRequeue(rec.next.Sub(now), pace)
}

// clampRequeue bounds a requeue delay to [requeueNewCluster, upper]: a read overdue by the
// clock still waits a moment rather than asking for no requeue at all.
func clampRequeue(d, upper time.Duration) time.Duration {
	return min(max(d, requeueNewCluster), upper)
}

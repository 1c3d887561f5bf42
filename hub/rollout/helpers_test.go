package rollout

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// rstatus shortens the rollout status in table rows.
type rstatus = fleetv1alpha1.RolloutStatus

// t0 is the tables' epoch; at(s) is s seconds after it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func mt(s int) *metav1.Time {
	t := metav1.NewTime(at(s))
	return &t
}

// clusterWrapper builds a Cluster: Ready, not done.
type clusterWrapper struct{ Cluster }

func c(name, rev string) *clusterWrapper {
	return &clusterWrapper{Cluster{Name: name, Revision: rev, Ready: true}}
}

func (w *clusterWrapper) done() *clusterWrapper { w.Done, w.NotDone = true, ""; return w }

func (w *clusterWrapper) why(s string) *clusterWrapper { w.NotDone = s; return w }

func (w *clusterWrapper) notReady() *clusterWrapper { w.Ready = false; return w }

func (w *clusterWrapper) blocked() *clusterWrapper {
	w.Blocked, w.NotDone = true, "upgradeStrategy.type is None"
	return w
}

func (w *clusterWrapper) ep(n int32) *clusterWrapper { w.Endpoints = n; return w }

func (w *clusterWrapper) label(k, v string) *clusterWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

func cs(ws ...*clusterWrapper) []Cluster {
	out := make([]Cluster, len(ws))
	for i, w := range ws {
		out[i] = w.Cluster
	}
	return out
}

// phaseText renders a phase as "Updating@30": the phase and, when set, Since in seconds
// after t0.
func phaseText(p ClusterPhase) string {
	if p.Since.IsZero() {
		return string(p.Phase)
	}
	return fmt.Sprintf("%s@%d", p.Phase, int(p.Since.Sub(t0)/time.Second))
}

// phases parses name/phaseText pairs.
func phases(pairs ...string) map[string]ClusterPhase {
	out := map[string]ClusterPhase{}
	for i := 0; i < len(pairs); i += 2 {
		phase, since, ok := strings.Cut(pairs[i+1], "@")
		p := ClusterPhase{Phase: fleetv1alpha1.ClusterRolloutPhase(phase)}
		if ok {
			s, err := strconv.Atoi(since)
			if err != nil {
				panic(err)
			}
			p.Since = at(s)
		}
		out[pairs[i]] = p
	}
	return out
}

// strategy is the default Rolling strategy (one at a time, 60s soak, 600s deadline) changed
// by opts.
func strategy(opts ...func(*Strategy)) Strategy {
	s, err := StrategyOf(nil)
	if err != nil {
		panic(err)
	}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func maxUnavailable(v intstr.IntOrString) func(*Strategy) {
	return func(s *Strategy) { s.MaxUnavailable = v }
}

func autoRollback(s *Strategy) { s.AutoRollback = true }

func typeNone(s *Strategy) { s.Type = fleetv1alpha1.RolloutNone }

func sortBy(key string) func(*Strategy) { return func(s *Strategy) { s.SortingLabelKey = key } }

func soak(d time.Duration) func(*Strategy) { return func(s *Strategy) { s.Soak = d } }

func withStages(st ...Stage) func(*Strategy) { return func(s *Strategy) { s.Stages = st } }

// stage is a stage selecting sel (label selector syntax).
func stage(name, sel string) Stage {
	parsed, err := k8slabels.Parse(sel)
	if err != nil {
		panic(err)
	}
	return Stage{Name: name, Selector: parsed}
}

func (s Stage) approval() Stage { s.Approval = true; return s }

func (s Stage) concurrency(v intstr.IntOrString) Stage { s.MaxConcurrency = &v; return s }

func (s Stage) soakFor(d time.Duration) Stage { s.Soak = &d; return s }

// want is what a table row expects of a Decision. Every field but message, eventText and
// stages (nil: not checked) is always compared.
type want struct {
	apply       map[string]string
	phases      map[string]string
	phase       fleetv1alpha1.RolloutPhase
	good        string
	failed      string
	stage       string
	updated     string
	stages      []string // "name:a,b" with "+approved" when approved
	progressing string   // "True/Progressing"
	paused      string   // "False/NotPaused"
	events      []string // reasons, in order
	message     []string // substrings of Status.Message
	eventText   []string // substrings of some event message
	requeue     time.Duration
}

// kv builds a map from key/value pairs.
func kv(pairs ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	return out
}

// check compares d with w.
func check(t *testing.T, d Decision, w want) {
	t.Helper()
	got := want{
		apply:       d.Apply,
		phases:      map[string]string{},
		phase:       d.Status.Phase,
		good:        d.Status.GoodRevision,
		failed:      d.Status.FailedRevision,
		stage:       d.Status.Stage,
		updated:     d.Status.Updated,
		progressing: string(d.Progressing.Status) + "/" + d.Progressing.Reason,
		paused:      string(d.Paused.Status) + "/" + d.Paused.Reason,
		requeue:     d.RequeueAfter,
		message:     w.message,
		eventText:   w.eventText,
	}
	for name, p := range d.Phases {
		got.phases[name] = phaseText(p)
	}
	for _, e := range d.Events {
		got.events = append(got.events, eventText(e))
	}
	if w.stages != nil {
		got.stages = stageTexts(d.Status.Stages)
	}
	if diff := cmp.Diff(w, got, cmp.AllowUnexported(want{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("decision (-want +got):\n%s\nmessage: %s\nevents: %v", diff, d.Status.Message, d.Events)
	}
	for _, s := range w.message {
		if !strings.Contains(d.Status.Message, s) {
			t.Errorf("message %q lacks %q", d.Status.Message, s)
		}
	}
	for _, s := range w.eventText {
		if !slices.ContainsFunc(d.Events, func(e Event) bool { return strings.Contains(e.Message, s) }) {
			t.Errorf("no event message contains %q: %v", s, d.Events)
		}
	}
	checkConditions(t, d)
}

// checkConditions checks what every decision's conditions must satisfy.
func checkConditions(t *testing.T, d Decision) {
	t.Helper()
	if d.Progressing.Type != ConditionProgressing || d.Paused.Type != ConditionPaused {
		t.Errorf("condition types %q, %q", d.Progressing.Type, d.Paused.Type)
	}
	if d.Progressing.Reason == "" || d.Progressing.Message == "" || d.Paused.Reason == "" {
		t.Errorf("conditions without reason or message: %+v, %+v", d.Progressing, d.Paused)
	}
	if d.Status.Message == "" {
		t.Errorf("status without a message: %+v", d.Status)
	}
}

func stageTexts(stages []fleetv1alpha1.StageStatus) []string {
	out := []string{}
	for _, s := range stages {
		txt := s.Name + ":" + strings.Join(s.Clusters, ",")
		if s.Approved {
			txt += "+approved"
		}
		out = append(out, txt)
	}
	return out
}

// allTo maps every name to rev.
func allTo(rev string, names ...string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		out[n] = rev
	}
	return out
}

// merged is the union of maps, later ones winning.
func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// eventText is an event's reason, and the cluster it is about after an @.
func eventText(e Event) string {
	if e.Cluster == "" {
		return e.Reason
	}
	return e.Reason + "@" + e.Cluster
}

package devfleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// ReadyTimeout bounds the wait for the sample RayService to become Ready once the fleet is up;
// warm, it takes seconds.
const ReadyTimeout = 5 * time.Minute

// readyPoll is how often the hub's RayService is looked at while waiting.
const readyPoll = 500 * time.Millisecond

// watchInterval is how often a running fleet checks that bin/hub and the spokes still run.
const watchInterval = 2 * time.Second

// tailLines is how much of each log a failure shows.
const tailLines = 20

// Run is the supervisor: it brings the dev fleet up, applies the sample, waits until the hub
// reports the sample RayService Ready and records every step in the state directory, then keeps
// the fleet running until ctx ends and stops it. out receives the progress. In the foreground
// (detached false) it also prints the summary and, when stopped, removes the state directory
// unless c.Keep; a detached supervisor leaves both to `dev up` and `dev down`. When the fleet
// does not come up, Run stops it, keeps the logs and fleet.json (phase failed) and returns the
// error.
func Run(ctx context.Context, c Config, out io.Writer, detached bool) error {
	l := Layout{Dir: c.StateDir}
	samples, err := c.samples(l)
	if err != nil {
		return err
	}
	if err = claim(l, c.CLI); err != nil {
		return err
	}
	st := c.initialState(l)
	if err = WriteState(l.StateFile(), st); err != nil {
		return err
	}
	begin := time.Now()
	fmt.Fprintf(out, "Starting a hub and two members (%s) on 127.0.0.1:%d-%d; logs in %s\n",
		strings.Join(ClusterNames()[1:], ", "), c.port(0), c.port(len(members)), l.LogDir())
	if c.Traffic {
		fmt.Fprintf(out, "With traffic: Traefik serving the hub's Gateway %s/%s on %s, load balancers on %s\n",
			localfleet.GatewayNamespace, localfleet.GatewayName, c.gatewayURL(), ipList(serveIPs()))
	}
	if c.Ray {
		fmt.Fprintln(out, "With real Ray: one real Node per member holding the Ray image; a Ray head takes a minute or more to serve")
	}
	f, err := c.start(ctx, l, out)
	if err == nil {
		fmt.Fprintf(out, "Control planes, bin/hub and the spokes up, members joined (%s).\n", since(begin))
		err = waitMembersReady(ctx, f)
	}
	if err == nil {
		fmt.Fprintf(out, "The hub sees every member Ready (%s).\n", since(begin))
		err = placeSamples(ctx, f, samples, out, begin)
	}
	if err != nil {
		return c.fail(ctx, f, l, st, err, out, detached)
	}
	now := time.Now()
	st.Phase, st.ReadyAt = PhaseReady, &now
	if err := WriteState(l.StateFile(), st); err != nil {
		fmt.Fprintln(out, "warning:", err)
	}
	if !detached {
		fmt.Fprintln(out)
		PrintSummary(ctx, out, st, c.kubectl())
		fmt.Fprintln(out, "\nThe fleet keeps running; Ctrl-C stops it and removes its state.")
	}
	watch(ctx, f, out)
	fmt.Fprintln(out, "Stopping the dev fleet...")
	f.Stop()
	if !detached && !c.Keep {
		return l.Remove()
	}
	return nil
}

// claim makes this process the state directory's supervisor: it creates the directories and
// writes the supervisor's pid file, refusing when a live supervisor has one already.
func claim(l Layout, cli string) error {
	if err := checkNotRunning(l); err != nil {
		return err
	}
	for _, d := range []string{l.PIDDir(), l.LogDir(), l.KubeconfigDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	return WriteRecord(l.SupervisorPIDFile(), RecordOf(os.Getpid(), cli))
}

// initialState is fleet.json while the fleet starts: the clusters' URLs and kubeconfig paths
// (and the gateway's URL) are known from the start, since the ports are fixed.
func (c Config) initialState(l Layout) *State {
	st := &State{Phase: PhaseStarting, SupervisorPID: os.Getpid(), LogDir: l.LogDir(), StartedAt: time.Now()}
	for i, name := range ClusterNames() {
		st.Clusters = append(st.Clusters, ClusterInfo{Name: name, Server: c.server(i), Kubeconfig: l.Kubeconfig(name)})
	}
	if c.Traffic {
		st.Traffic = &TrafficInfo{GatewayURL: c.gatewayURL(), ServeIPs: serveIPs(), Ray: c.Ray}
	}
	return st
}

// sampleFile is a sample and where its copy goes in the state directory.
type sampleFile struct {
	*Sample
	path string
}

// samples are the samples the fleet applies: the traffic sample too with Traffic; with Ray,
// the Ray sample only (the others' Ray Pods would land on the real Nodes, which lack their
// image).
func (c Config) samples(l Layout) ([]sampleFile, error) {
	if c.Ray {
		image, err := localcluster.ArchiveImageName(c.rayImage())
		if err != nil {
			return nil, fmt.Errorf("%w: run `make ray-image`", err)
		}
		s, err := LoadRaySample(image)
		if err != nil {
			return nil, err
		}
		return []sampleFile{{s, l.RaySampleFile()}}, nil
	}
	s, err := LoadSample()
	if err != nil {
		return nil, err
	}
	all := []sampleFile{{s, l.SampleFile()}}
	if c.Traffic {
		if s, err = LoadTrafficSample(); err != nil {
			return nil, err
		}
		all = append(all, sampleFile{s, l.TrafficSampleFile()})
	}
	return all, nil
}

// ipList shows serve IPs as "us 10.99.0.1, eu 10.99.0.2", in the members' order.
func ipList(ips map[string]string) string {
	var parts []string
	for _, m := range members {
		if ip, ok := ips[m.name]; ok {
			parts = append(parts, m.name+" "+ip)
		}
	}
	return strings.Join(parts, ", ")
}

// start starts the local fleet, writing a pid file for every process it starts, and copies
// the admin kubeconfigs into the state directory.
func (c Config) start(ctx context.Context, l Layout, out io.Writer) (*localfleet.Fleet, error) {
	var mu sync.Mutex // OnStart runs on several goroutines; keep warnings whole
	onStart := func(cluster string, p *localcluster.Process) {
		if err := WriteRecord(l.PIDFile(cluster, p.Name), RecordOf(p.PID(), p.Bin)); err != nil {
			mu.Lock()
			fmt.Fprintln(out, "warning:", err)
			mu.Unlock()
		}
	}
	f, err := localfleet.Start(ctx, c.fleetOptions(l, onStart))
	if err != nil {
		return nil, err
	}
	kubeconfigs := map[string]string{HubName: f.Hub.Kubeconfig}
	for name, m := range f.Members {
		kubeconfigs[name] = m.Kubeconfig
	}
	for name, src := range kubeconfigs {
		data, err := os.ReadFile(src)
		if err == nil {
			err = os.WriteFile(l.Kubeconfig(name), data, 0o600)
		}
		if err != nil {
			return f, fmt.Errorf("copying the kubeconfig of %s: %w", name, err)
		}
	}
	return f, nil
}

// placeSamples applies the samples to the hub, then waits until the hub reports each
// RayService Ready.
func placeSamples(ctx context.Context, f *localfleet.Fleet, samples []sampleFile, out io.Writer, begin time.Time) error {
	for _, s := range samples {
		if err := applySample(ctx, f, s); err != nil {
			return err
		}
		fmt.Fprintf(out, "Applied PlacementPolicy %s/%s (clusters: %d) and RayService %s/%s (%s); waiting for Ready...\n",
			s.Namespace(), s.Policy.Name, ptrValue(s.Policy.Spec.Clusters), s.Namespace(), s.Service.Name, s.path)
	}
	for _, s := range samples {
		if err := waitReady(ctx, f, client.ObjectKeyFromObject(s.Service)); err != nil {
			return err
		}
		fmt.Fprintf(out, "RayService %s/%s is Ready on the hub (%s after start).\n", s.Namespace(), s.Service.Name, since(begin))
	}
	return nil
}

// applySample creates the sample's namespace and objects on the hub (after what the members
// need, see prepareMembers) and copies it into the state directory.
func applySample(ctx context.Context, f *localfleet.Fleet, s sampleFile) error {
	if err := prepareMembers(ctx, f, s.Sample); err != nil {
		return err
	}
	if err := f.Hub.CreateNamespace(ctx, s.Namespace()); err != nil {
		return fmt.Errorf("on the hub: %w", err)
	}
	if err := s.apply(ctx, f.Hub.Client); err != nil {
		return err
	}
	if err := os.WriteFile(s.path, s.source, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", s.path, err)
	}
	return nil
}

// prepareMembers gives each member what s.MemberConfigMap says it needs before the hub places
// s there: the namespace, made as a member's admin would (open to the hub, Pod Security
// baseline, which the member's guard asks of namespaces it lets the hub place in), and the
// ConfigMap. Nothing without MemberConfigMap.
func prepareMembers(ctx context.Context, f *localfleet.Fleet, s *Sample) error {
	if s.MemberConfigMap == nil {
		return nil
	}
	for _, m := range members {
		c := f.Members[m.name]
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Namespace(), Labels: map[string]string{
			labels.HubNamespace:                  labels.HubNamespaceAllowed,
			"pod-security.kubernetes.io/enforce": "baseline",
		}}}
		for _, obj := range []client.Object{ns, s.MemberConfigMap.DeepCopy()} {
			if err := c.Client.Create(ctx, obj); client.IgnoreAlreadyExists(err) != nil {
				return fmt.Errorf("creating %T %s on member %s: %w", obj, client.ObjectKeyFromObject(obj), m.name, err)
			}
		}
	}
	return nil
}

// waitMembersReady waits until the hub reports every member Ready: a RayService applied
// before would be placed on the members Ready at the time only, fewer than it asks for.
func waitMembersReady(ctx context.Context, f *localfleet.Fleet) error {
	last := "no MemberClusters yet"
	err := poll(ctx, f, func(ctx context.Context) (bool, error) {
		var list fleetv1alpha1.MemberClusterList
		if err := f.Hub.Client.List(ctx, &list); err != nil {
			last = lastUnlessDone(ctx, last, err)
			return false, nil
		}
		var notReady []string
		for _, m := range list.Items {
			if !meta.IsStatusConditionTrue(m.Status.Conditions, fleetv1alpha1.ConditionReady) {
				notReady = append(notReady, m.Name+" ("+conditionText(m.Status.Conditions, fleetv1alpha1.ConditionReady)+")")
			}
		}
		last = "not Ready: " + strings.Join(notReady, ", ")
		return len(list.Items) == len(members) && len(notReady) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("the hub did not see every member Ready within %s (last: %s): %w", ReadyTimeout, last, err)
	}
	return nil
}

// waitReady waits until the hub reports the RayService Ready and placed on as many clusters
// as its policy asks for (its RayServiceBinding's Placed condition).
func waitReady(ctx context.Context, f *localfleet.Fleet, key client.ObjectKey) error {
	last := "not created yet"
	err := poll(ctx, f, func(ctx context.Context) (bool, error) {
		var rs rayv1.RayService
		var binding fleetv1alpha1.RayServiceBinding
		if err := f.Hub.Client.Get(ctx, key, &rs); err != nil {
			last = lastUnlessDone(ctx, last, err)
			return false, nil
		}
		if err := f.Hub.Client.Get(ctx, key, &binding); client.IgnoreNotFound(err) != nil {
			last = lastUnlessDone(ctx, last, err)
			return false, nil
		}
		last = fmt.Sprintf("RayService %s; RayServiceBinding %s",
			conditionText(rs.Status.Conditions, string(rayv1.RayServiceReady)),
			conditionText(binding.Status.Conditions, fleetv1alpha1.ConditionPlaced))
		return meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady)) &&
			meta.IsStatusConditionTrue(binding.Status.Conditions, fleetv1alpha1.ConditionPlaced), nil
	})
	if err != nil {
		return fmt.Errorf("RayService %s did not become Ready on the hub within %s (last: %s): %w", key, ReadyTimeout, last, err)
	}
	return nil
}

// poll runs cond every readyPoll for up to ReadyTimeout; it gives up at once when bin/hub or a
// spoke exits.
func poll(ctx context.Context, f *localfleet.Fleet, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, readyPoll, ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		if err := f.Exited(); err != nil {
			return false, err
		}
		return cond(ctx)
	})
}

// lastUnlessDone is what a poll last saw after a read failed with err: err, unless the poll's
// time ran out, which fails the read and says nothing about the fleet.
func lastUnlessDone(ctx context.Context, last string, err error) string {
	if ctx.Err() != nil {
		return last
	}
	return err.Error()
}

// conditionText shows one condition as "Type=Status Reason: message".
func conditionText(conds []metav1.Condition, condType string) string {
	c := meta.FindStatusCondition(conds, condType)
	if c == nil {
		return condType + " not set"
	}
	return fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
}

// fail handles a fleet that did not come up: it says why, with the tails of the agents' logs
// as they were at the time, stops what runs, keeps the logs and records phase failed (a
// detached `dev up` has shown all of it from the supervisor's log by then). When ctx ended
// (Ctrl-C, `dev down`) that is no failure: the state goes as after a normal stop.
func (c Config) fail(ctx context.Context, f *localfleet.Fleet, l Layout, st *State, cause error, out io.Writer, detached bool) error {
	if ctx.Err() != nil {
		fmt.Fprintln(out, "Interrupted; stopping the dev fleet...")
		if f != nil {
			f.Stop()
		}
		if !detached && !c.Keep {
			_ = l.Remove()
		}
		return fmt.Errorf("interrupted before the fleet was ready: %w", ctx.Err())
	}
	fmt.Fprintf(out, "The dev fleet did not come up: %v\n", cause)
	writeAgentLogTails(out, l.LogDir(), tailLines)
	if f != nil {
		f.Stop()
	}
	// The logs are what is left to look at; the rest is large (etcd) or useless now.
	for _, d := range []string{l.ClustersDir(), l.KubeconfigDir(), l.PIDDir()} {
		_ = os.RemoveAll(d)
	}
	st.Phase, st.Error = PhaseFailed, cause.Error()
	if err := WriteState(l.StateFile(), st); err != nil {
		fmt.Fprintln(out, "warning:", err)
	}
	fmt.Fprintf(out, "The logs stay in %s; `rayfleet dev down` removes them.\n", l.LogDir())
	return errors.New("the dev fleet did not come up")
}

// watch waits until ctx ends, saying once when bin/hub or a spoke exits meanwhile (`dev status`
// shows it too).
func watch(ctx context.Context, f *localfleet.Fleet, out io.Writer) {
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := f.Exited(); err != nil && !warned {
				fmt.Fprintln(out, "warning:", err)
				warned = true
			}
		}
	}
}

// since is the time since begin, rounded for people.
func since(begin time.Time) time.Duration { return time.Since(begin).Round(100 * time.Millisecond) }

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

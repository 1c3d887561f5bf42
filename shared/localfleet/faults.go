package localfleet

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/partition"
)

// Faults of one member beyond StopMemberAPIServer: its spoke killed as a crash would, its etcd
// stopped and started again. While a fault lasts, the member is cut off: its spoke may exit
// without Exited reporting it, and ending the fault starts the spoke again if it did.

// KillSpoke kills the member's bin/spoke with SIGKILL, as a crash or an out-of-memory kill
// would (no graceful shutdown, nothing flushed), and waits for it to exit. Exited does not
// report that exit; StartSpoke brings the spoke back.
func (f *Fleet) KillSpoke(name string) error {
	spoke, err := f.cutOffMember(name)
	if err != nil {
		return err
	}
	spoke.Kill()
	return nil
}

// StartSpoke starts the member's bin/spoke again with the flags it first started with, after
// KillSpoke, and waits until it is ready; its log is appended to the same file. From then on
// Exited reports the spoke's exit again. It fails if the spoke still runs.
func (f *Fleet) StartSpoke(ctx context.Context, name string) error {
	f.mu.Lock()
	spoke := f.Spokes[name]
	f.mu.Unlock()
	if spoke == nil {
		return fmt.Errorf("no member %q", name)
	}
	if exited, _ := spoke.Exited(); !exited {
		return fmt.Errorf("member %s: bin/spoke (pid %d) still runs", name, spoke.PID())
	}
	if err := f.restartSpokeIfExited(ctx, name); err != nil {
		return err
	}
	f.reconnect(name)
	return nil
}

// StopMemberEtcd stops the member's etcd (SIGTERM; its data stays): its API server keeps
// running but fails every request that reaches storage, as during an etcd restart or a lost
// etcd quorum, until StartMemberEtcd. Meanwhile the spoke may exit without Exited reporting
// it.
func (f *Fleet) StopMemberEtcd(name string) error {
	if _, err := f.cutOffMember(name); err != nil {
		return err
	}
	f.mu.Lock()
	member := f.Members[name]
	f.mu.Unlock()
	member.StopEtcd()
	return nil
}

// StartMemberEtcd ends the fault StopMemberEtcd began: it starts the member's etcd again on the
// same data directory and ports, waits until the API server (not restarted: it reconnects by
// itself) is ready again, and starts the spoke again if it exited meanwhile. From then on
// Exited reports the spoke's exit again.
func (f *Fleet) StartMemberEtcd(ctx context.Context, name string) error {
	f.mu.Lock()
	member := f.Members[name]
	f.mu.Unlock()
	if member == nil {
		return fmt.Errorf("no member %q", name)
	}
	if err := member.StartEtcd(ctx); err != nil {
		return fmt.Errorf("member %s: %w", name, err)
	}
	if err := f.restartSpokeIfExited(ctx, name); err != nil {
		return err
	}
	f.reconnect(name)
	return nil
}

// cutOffMember marks the member cut off (see Exited) and returns its spoke.
func (f *Fleet) cutOffMember(name string) (*localcluster.Manager, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	spoke := f.Spokes[name]
	if f.Members[name] == nil || spoke == nil {
		return nil, fmt.Errorf("no member %q", name)
	}
	if f.cutOff == nil {
		f.cutOff = map[string]bool{}
	}
	f.cutOff[name] = true
	return spoke, nil
}

// reconnect ends the member's cut-off: Exited reports its spoke's exit again.
func (f *Fleet) reconnect(name string) {
	f.mu.Lock()
	delete(f.cutOff, name)
	f.mu.Unlock()
}

// restartSpokeIfExited starts the member's spoke again with its flags if it is not running.
func (f *Fleet) restartSpokeIfExited(ctx context.Context, name string) error {
	f.mu.Lock()
	member, spoke, args := f.Members[name], f.Spokes[name], f.spokeArgs[name]
	f.mu.Unlock()
	if exited, _ := spoke.Exited(); !exited {
		return nil
	}
	restarted, err := member.StartManager(ctx, spoke.Name, spoke.Bin, args.kubeconfig, args.args, args.env)
	if err != nil {
		return fmt.Errorf("member %s: restarting bin/spoke: %w", name, err)
	}
	f.mu.Lock()
	f.Spokes[name] = restarted
	f.mu.Unlock()
	return nil
}

// SkewSpokeClock restarts the member's spoke with its heartbeat clock offset from the
// machine's, as on a member whose clock is off: bin/spoke-faultinject (make
// build-faultinject) with RAYFLEET_FAULT_CLOCK_OFFSET. A zero offset goes back to bin/spoke.
// The spoke is stopped gracefully and waited for; later restarts keep the offset.
func (f *Fleet) SkewSpokeClock(ctx context.Context, name string, offset time.Duration) error {
	bin, env := filepath.Join(f.opts.RayFleetBin, "spoke"), []string(nil)
	if offset != 0 {
		bin, env = filepath.Join(f.opts.RayFleetBin, "spoke-faultinject"), []string{"RAYFLEET_FAULT_CLOCK_OFFSET=" + offset.String()}
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("member %s: %w (run make build-faultinject)", name, err)
		}
	}
	// Cut off while the spoke is swapped, so that Exited does not report its planned exit.
	spoke, err := f.cutOffMember(name)
	if err != nil {
		return err
	}
	defer f.reconnect(name)
	f.mu.Lock()
	member, args := f.Members[name], f.spokeArgs[name]
	f.mu.Unlock()
	spoke.Stop()
	restarted, err := member.StartManager(ctx, spoke.Name, bin, args.kubeconfig, args.args, env)
	if err != nil {
		return fmt.Errorf("member %s: starting %s: %w", name, bin, err)
	}
	args.env = env
	f.mu.Lock()
	f.Spokes[name] = restarted
	f.spokeArgs[name] = args
	f.mu.Unlock()
	return nil
}

// FailServeEndpoint makes the member's serve endpoint fail while its API server and spoke keep
// running: its load balancer stand-in answers 503 to every request (the hub's probe and the
// gateway's traffic alike), as a dead Ray Serve proxy behind a live load balancer does, until
// HealServeEndpoint. It needs Options.Traffic.
func (f *Fleet) FailServeEndpoint(name string) error {
	return f.setServeEndpointFailing(name, true)
}

// HealServeEndpoint ends the fault FailServeEndpoint began: the member's stand-in serves again.
func (f *Fleet) HealServeEndpoint(name string) error {
	return f.setServeEndpointFailing(name, false)
}

// setServeEndpointFailing turns the member's serve endpoint fault on or off.
func (f *Fleet) setServeEndpointFailing(name string, failing bool) error {
	f.mu.Lock()
	lb := f.LoadBalancers[name]
	f.mu.Unlock()
	if lb == nil {
		return fmt.Errorf("member %q has no load balancer stand-in (no such member, or the fleet runs without traffic)", name)
	}
	lb.SetFailing(failing)
	return nil
}

// startHubProxy starts the proxy the hub reaches a Partitionable member's API server through.
func (f *Fleet) startHubProxy(name string, member *localcluster.Cluster) error {
	server, err := url.Parse(member.Host())
	if err != nil {
		return fmt.Errorf("the API server URL %q of %s: %w", member.Host(), name, err)
	}
	p, err := partition.Start("127.0.0.1:0", server.Host)
	if err != nil {
		return fmt.Errorf("member %s: %w", name, err)
	}
	f.mu.Lock()
	f.HubProxies[name] = p
	f.mu.Unlock()
	return nil
}

// Partition cuts the hub off the member in the network: the proxy between them (the member
// must be Partitionable) forwards nothing more, holding new and open connections silently as a
// link dropping packets does, until Heal. The member, its spoke and its serve endpoint run on
// and still talk to their own API server; the hub sees only timeouts. It is not a cut-off for
// Exited: nothing on the member is expected to exit.
func (f *Fleet) Partition(name string) error {
	p, err := f.hubProxy(name)
	if err != nil {
		return err
	}
	p.Cut()
	return nil
}

// Heal ends the partition Partition began: the proxy forwards again, what it held first.
func (f *Fleet) Heal(name string) error {
	p, err := f.hubProxy(name)
	if err != nil {
		return err
	}
	p.Heal()
	return nil
}

// hubProxy is the proxy in front of the member's API server as the hub sees it.
func (f *Fleet) hubProxy(name string) (*partition.Proxy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.HubProxies[name]
	if p == nil {
		return nil, fmt.Errorf("member %q has no proxy in front of its API server (no such member, or not Partitionable)", name)
	}
	return p, nil
}

package localfleet

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
)

// Upgrade moves the running fleet to the binaries in rayFleetBin as the charts' upgrade would:
// bin/hub first (stopped, started from the new binary with its flags), then, member by member,
// `rayfleet join` run again with the new CLI (the hub's identity and the member's guard, as
// the spoke chart renders them) and bin/spoke restarted from the new binary with its flags.
// Nothing else is touched: what the hub placed stays where it runs.
func (f *Fleet) Upgrade(ctx context.Context, rayFleetBin string) error {
	f.mu.Lock()
	f.opts.RayFleetBin, f.opts.CLI = rayFleetBin, filepath.Join(rayFleetBin, "rayfleet")
	names := slices.Sorted(maps.Keys(f.Members))
	f.mu.Unlock()
	if err := f.StartHubReplica(ctx, 0); err != nil {
		return fmt.Errorf("upgrading bin/hub: %w", err)
	}
	for _, name := range names {
		f.mu.Lock()
		member, spoke, args := f.Members[name], f.Spokes[name], f.spokeArgs[name]
		f.mu.Unlock()
		if err := f.join(ctx, name, member); err != nil {
			return fmt.Errorf("upgrading member %s: %w", name, err)
		}
		spoke.Stop()
		restarted, err := member.StartManager(ctx, spoke.Name, filepath.Join(rayFleetBin, "spoke"), args.kubeconfig, args.args, args.env)
		if err != nil {
			return fmt.Errorf("upgrading member %s: starting bin/spoke: %w", name, err)
		}
		f.mu.Lock()
		f.Spokes[name] = restarted
		f.mu.Unlock()
	}
	return nil
}

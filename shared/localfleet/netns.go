package localfleet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// NetnsEnv is set to "1" in a test binary RunInNetworkNamespace runs again inside the network
// namespace it made.
const NetnsEnv = "RAYFLEET_E2E_NETNS"

// InNetworkNamespace reports whether this process is the one RunInNetworkNamespace started.
func InNetworkNamespace() bool {
	return os.Getenv(NetnsEnv) == "1"
}

// netnsSetup is the shell script that prepares a network namespace: loopback up, ips on it, and
// a default route through it (Traefik and the load balancer stand-ins only ever talk to
// addresses on lo, but some clients look for a default route before dialing).
func netnsSetup(ips []string) string {
	steps := []string{"ip link set lo up"}
	for _, ip := range slices.Sorted(slices.Values(ips)) {
		steps = append(steps, "ip addr add "+ip+"/32 dev lo")
	}
	return strings.Join(append(steps, "ip route add default dev lo"), " && ")
}

// RunInNetworkNamespace runs this test binary again, with the same arguments, inside a new
// network namespace whose loopback interface holds ips (the members' serve IPs, which nothing
// may bind outside 127.0.0.1 on the host), and returns its exit code; pkg names the caller in
// failures. A TestMain calls it unless InNetworkNamespace. When the namespace cannot be made
// (not root, no unshare or ip) the package fails saying so: skipping would hide that traffic was
// never tested.
func RunInNetworkNamespace(pkg string, ips []string) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "FAIL "+pkg+": "+format+"\n", args...)
		return 1
	}
	if os.Geteuid() != 0 {
		return fail("the tests run in a network namespace of their own (unshare -n) with the members' serve IPs on its loopback interface, which needs root; running as uid %d", os.Geteuid())
	}
	for _, tool := range []string{"unshare", "ip", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fail("%s is needed to make the tests' network namespace: %v", tool, err)
		}
	}
	setup := netnsSetup(ips)
	// A probe first, so that a namespace that cannot be made is told apart from failing tests.
	if out, err := exec.Command("unshare", "-n", "--", "sh", "-c", setup).CombinedOutput(); err != nil {
		return fail("cannot make the tests' network namespace (unshare -n -- sh -c %q): %v\n%s", setup, err, out)
	}
	args := append([]string{"-n", "--", "sh", "-c", setup + ` && exec "$0" "$@"`}, os.Args...)
	cmd := exec.Command("unshare", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), NetnsEnv+"=1")
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		return exitErr.ExitCode()
	case err != nil:
		return fail("running the tests in their network namespace: %v", err)
	}
	return 0
}

//go:build e2e

package charts

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// canI is one `kubectl auth can-i` question and the answer least privilege requires.
type canI struct {
	// who is the identity asking: "hub on member", "spoke on member" or "hub on hub".
	who string
	// args follow `kubectl auth can-i`: verb, resource, then -n NS or -A.
	args []string
	want bool
}

// checkPermissions asks the API servers, as each chart identity, what it may do: what the
// agents need is allowed, and reading Secrets or Pods of the member is not.
func (e *env) checkPermissions(t *testing.T) {
	kubeconfigs := map[string]string{
		"hub on member":   e.hubIdentityKubeconfig(t),
		"spoke on member": e.spokeSA,
		"hub on hub":      e.hubSA,
	}
	checks := []canI{
		{who: "hub on member", args: []string{"get", "secrets", "-A"}, want: false},
		{who: "hub on member", args: []string{"list", "secrets", "-A"}, want: false},
		{who: "hub on member", args: []string{"get", "secrets", "-n", namespace}, want: false},
		{who: "hub on member", args: []string{"list", "pods", "-A"}, want: false},
		{who: "hub on member", args: []string{"create", "pods", "--subresource=exec", "-n", "serve"}, want: false},
		{who: "hub on member", args: []string{"list", "rayclusters.ray.io", "-A"}, want: false},
		{who: "hub on member", args: []string{"create", "rayservices.ray.io", "-n", "serve"}, want: true},
		{who: "hub on member", args: []string{"delete", "rayservices.ray.io", "-n", "serve"}, want: true},
		{who: "hub on member", args: []string{"create", "namespaces"}, want: true},
		{who: "hub on member", args: []string{"delete", "namespaces"}, want: false},
		{who: "hub on member", args: []string{"get", "clusterreports.fleet.rayfleet.io"}, want: true},
		{who: "spoke on member", args: []string{"list", "secrets", "-A"}, want: false},
		{who: "spoke on member", args: []string{"get", "secrets", "-n", "serve"}, want: true},
		{who: "hub on hub", args: []string{"get", "secrets", "-n", "kube-system"}, want: false},
		{who: "hub on hub", args: []string{"list", "secrets", "-n", namespace}, want: true},
		{who: "hub on hub", args: []string{"create", "memberclusters.fleet.rayfleet.io"}, want: false},
	}
	for _, c := range checks {
		got, err := e.canI(t.Context(), kubeconfigs[c.who], c.args)
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.who, err)
		case got != c.want:
			t.Errorf("%-15s can-i %-50s = %-3s want %s", c.who, strings.Join(c.args, " "), yesNo(got), yesNo(c.want))
		default:
			t.Logf("%-15s can-i %-50s = %s", c.who, strings.Join(c.args, " "), yesNo(got))
		}
	}
}

// canI runs `kubectl auth can-i`, which exits 0 for yes and 1 for no.
func (e *env) canI(ctx context.Context, kubeconfig string, args []string) (bool, error) {
	out, err := e.run(ctx, filepath.Join(e.k8sBin, "kubectl"), append([]string{"--kubeconfig", kubeconfig, "auth", "can-i"}, args...)...)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1 && saidNo(out):
		return false, nil
	default:
		return false, err
	}
}

// saidNo tells a denial (a line "no", with the authorizer's reason after it if any) from
// kubectl failing to ask, which exits 1 too.
func saidNo(out string) bool {
	for line := range strings.Lines(out) {
		if line = strings.TrimSpace(line); line == "no" || strings.HasPrefix(line, "no - ") {
			return true
		}
	}
	return false
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

package devfleet

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/fleetstatus"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/rayapp"
	rfscheme "github.com/rayfleet/rayfleet/shared/scheme"
)

// hubTimeout bounds each request to the hub when printing the status: a hub that does not
// answer in that time is reported, not waited for.
const hubTimeout = 5 * time.Second

// PrintSummary prints what `rayfleet status -A` prints against the hub, then how to reach each
// cluster with kubectl (the program to show as kubectl) and where the logs are.
func PrintSummary(ctx context.Context, out io.Writer, st *State, kubectl string) {
	if hub, ok := st.Cluster(HubName); ok {
		if err := printFleetStatus(ctx, out, hub.Kubeconfig); err != nil {
			fmt.Fprintf(out, "(no fleet status: %v)\n", err)
		}
	}
	fmt.Fprintln(out, "\nKubeconfigs (admin):")
	for _, c := range st.Clusters {
		what := "rayservices,rayclusters,pods -A"
		if c.Name == HubName {
			what = "rayservices,placementpolicies,memberclusters,namespacegrants -A"
		}
		fmt.Fprintf(out, "  %-4s %s --kubeconfig %s get %s\n", c.Name+":", kubectl, c.Kubeconfig, what)
	}
	if st.Traffic != nil {
		printTraffic(out, st, kubectl)
	}
	fmt.Fprintf(out, "Logs: %s\n", st.LogDir)
}

// blueGreenPatch changes the traffic sample's spec, which makes a new revision: a blue/green
// rollout to the other member.
const blueGreenPatch = `{"spec":{"rayClusterConfig":{"headGroupSpec":{"template":{"metadata":{"annotations":{"demo/version":"2"}}}}}}}`

// rayBlueGreenPatch changes the Ray sample's Serve app to answer v2: a new revision, rolled
// out blue/green to the other member.
var rayBlueGreenPatch = fmt.Sprintf(`{"spec":{"serveConfigV2":%q}}`, rayapp.ServeConfig("v2"))

// printTraffic says where the Gateway serves, where the load balancers are and how to start a
// blue/green rollout of the traffic sample (or the Ray sample's, with Ray).
func printTraffic(out io.Writer, st *State, kubectl string) {
	hub, _ := st.Cluster(HubName)
	fmt.Fprintf(out, "Gateway %s/%s (Traefik on the hub): %s\n", localfleet.GatewayNamespace, localfleet.GatewayName, st.Traffic.GatewayURL)
	if st.Traffic.Ray {
		fmt.Fprintf(out, "Ask Ray Serve through it: curl %s/\n", st.Traffic.GatewayURL)
		fmt.Fprintf(out, "Blue/green of demo/hello to v2: %s --kubeconfig %s -n demo patch rayservice hello --type merge -p '%s'\n",
			kubectl, hub.Kubeconfig, rayBlueGreenPatch)
		return
	}
	fmt.Fprintf(out, "Load balancers: %s (they answer only where these addresses are assigned, as in the e2e tests' network namespace)\n",
		ipList(st.Traffic.ServeIPs))
	fmt.Fprintf(out, "Blue/green of demo/berry: %s --kubeconfig %s -n demo patch rayservice berry --type merge -p '%s'\n",
		kubectl, hub.Kubeconfig, blueGreenPatch)
}

// printFleetStatus prints the fleet status tables of every namespace.
func printFleetStatus(ctx context.Context, out io.Writer, kubeconfig string) error {
	hub, err := hubClient(kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, hubTimeout)
	defer cancel()
	fleet, err := fleetstatus.Read(ctx, hub, "")
	if err != nil {
		return fmt.Errorf("reading the hub: %w", err)
	}
	return fleetstatus.Write(out, fleet, time.Now(), false)
}

// hubClient is a client for the hub from its admin kubeconfig.
func hubClient(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading the hub's kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = hubTimeout
	scheme, err := rfscheme.New()
	if err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the hub at %s: %w", cfg.Host, err)
	}
	return cl, nil
}

// kubectl is how to show kubectl in hints: the one `make tools` built when there is one
// (kubectl may not be on PATH).
func (c Config) kubectl() string {
	if p := filepath.Join(c.K8sBin, "kubectl"); c.K8sBin != "" && isFile(p) {
		return p
	}
	return "kubectl"
}

// Kubectl is what Config.kubectl is for the directory of tools k8sBin.
func Kubectl(k8sBin string) string { return Config{K8sBin: k8sBin}.kubectl() }

// writeAgentLogTails writes the last lines of bin/hub's, the spokes' and the joins' logs in
// dir: what says most about a fleet that does not become Ready. A control plane that fails to
// start says why in the error itself (localcluster adds its components' log tails).
func writeAgentLogTails(w io.Writer, dir string, lines int) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		base := filepath.Base(f)
		if base == HubName+"-hub.log" || strings.HasSuffix(base, "-spoke.log") || strings.HasPrefix(base, "join-") {
			fmt.Fprintf(w, "===== %s, last %d lines =====\n%s\n", f, lines, tail(f, lines))
		}
	}
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return strings.Join(all, "\n")
}

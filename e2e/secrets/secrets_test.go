//go:build e2e

// Package secrets checks end to end that no credential reaches a log line or an Event: a local
// fleet (see shared/localfleet) with one member is started at each log level bin/hub and
// bin/spoke accept, joined with `rayfleet join`, given a RayService with Ray token
// authentication, and then every log file of the fleet and every Event on the hub and the
// member is searched for the member's hub token, the kubeconfig the hub holds for it, and the
// Ray auth token. It has a package of its own because it starts fleets of its own, with
// settings no other test wants.
// It imports only shared/ (the local fleet and test helpers), never hub/, spoke/ or cmd/.
//
//	make build && go test -tags e2e ./e2e/secrets/   # binaries from bin/ and bin/k8s
//	RAYFLEET_E2E_KEEP=1 go test -tags e2e …           # keep the state dirs (logs) afterwards
package secrets

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// mostVerbose is the most verbose --zap-log-level the mains accept: controller-runtime turns a
// number n into zap level -n held in an int8, so 128 enables every V-level (129 would wrap round
// to the least verbose).
const mostVerbose = "128"

// levels are the log levels the fleet runs at: zap's named levels and the most verbose.
var levels = []string{"debug", "info", "error", mostVerbose}

const (
	member  = "m1"
	ns      = "secrets"
	name    = "svc"
	policy  = "anywhere"
	timeout = 3 * time.Minute
	poll    = 500 * time.Millisecond
	// authTokenKey is KubeRay's key of the Ray auth token in its Secret.
	authTokenKey = "auth_token"
	// rayVersion is the first Ray release with token authentication.
	rayVersion = "2.52.0"
	// minNeedle is the shortest piece of a secret searched for: shorter pieces would match by
	// chance.
	minNeedle = 16
)

// TestSecretsNeverLogged runs a fleet at each log level and searches its logs and Events for
// the credentials it handled.
func TestSecretsNeverLogged(t *testing.T) {
	for _, level := range levels {
		t.Run("level="+level, func(t *testing.T) {
			f := startFleet(t, level)
			placeRayServiceWithAuth(t, f)
			secrets := collectSecrets(t, f)
			if leaks := scanLogs(t, f.Dir, secrets); len(leaks) > 0 {
				t.Errorf("secrets in logs at --zap-log-level=%s:\n  %s", level, strings.Join(leaks, "\n  "))
			}
			if leaks := scanEvents(t, f, secrets); len(leaks) > 0 {
				t.Errorf("secrets in Events at --zap-log-level=%s:\n  %s", level, strings.Join(leaks, "\n  "))
			}
		})
	}
}

// startFleet starts a hub and one member, bin/hub and bin/spoke at level, and waits until the
// hub finds the member Ready (it has read the kubeconfig Secret `rayfleet join` wrote).
func startFleet(t *testing.T, level string) *localfleet.Fleet {
	t.Helper()
	f, err := localfleet.Start(t.Context(), localfleet.Options{
		Members: []localfleet.MemberSpec{{
			Name:  member,
			Nodes: localcluster.FakeNodes(1, localcluster.NodeSpec{CPU: "16", Memory: "64Gi"}),
		}},
		LogLevel:  level,
		KeepState: os.Getenv("RAYFLEET_E2E_KEEP") != "",
	})
	if err != nil {
		t.Fatalf("starting the local fleet: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			f.DumpLogs(os.Stderr, 40)
		}
		f.Stop()
	})
	eventually(t, f, func(g gomega.Gomega) {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(f.Hub.Client.Get(t.Context(), client.ObjectKey{Name: member}, &mc)).To(gomega.Succeed())
		g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionReady)).To(gomega.BeTrue(),
			"MemberCluster %s Ready: %v", member, mc.Status.Conditions)
	})
	return f
}

// placeRayServiceWithAuth places a RayService with Ray token authentication on the member and
// waits until it is Ready: the spoke has then created the auth Secret, read it, and sent the
// token to the Ray dashboard (the stand-in records it).
func placeRayServiceWithAuth(t *testing.T, f *localfleet.Fleet) {
	t.Helper()
	ctx := t.Context()
	hub := f.Hub.Client
	if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatalf("creating namespace %s on the hub: %v", ns, err)
	}
	pp := &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: policy}}
	if err := hub.Create(ctx, pp); err != nil {
		t.Fatalf("creating PlacementPolicy %s/%s: %v", ns, policy, err)
	}
	rs := raybuilder.MakeRayService(name, ns).ReplicaBounds(0, 1, 2).Annotation(labels.PlacementPolicy, policy).Obj()
	rs.UID, rs.Generation = "", 0
	rs.Spec.RayClusterSpec.RayVersion = rayVersion
	rs.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
	if err := hub.Create(ctx, rs); err != nil {
		t.Fatalf("creating RayService %s/%s on the hub: %v", ns, name, err)
	}
	eventually(t, f, func(g gomega.Gomega) {
		var got rayv1.RayService
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(rs), &got)).To(gomega.Succeed())
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, string(rayv1.RayServiceReady))).To(gomega.BeTrue(),
			"hub RayService Ready: %v", got.Status.Conditions)
		var copied rayv1.RayService
		g.Expect(f.Members[member].Client.Get(ctx, client.ObjectKeyFromObject(rs), &copied)).To(gomega.Succeed())
		active := copied.Status.ActiveServiceStatus.RayClusterName
		g.Expect(active).NotTo(gomega.BeEmpty())
		c := f.Dashboards[member].Cluster(ns, active)
		g.Expect(c).NotTo(gomega.BeNil(), "the dashboard stand-in never heard of %s", active)
		g.Expect(c.LastAuthorization()).To(gomega.HavePrefix("Bearer "), "the spoke sent no Ray auth token")
	})
}

// secret is a credential to search for, under a name that the test may print (the value never is).
type secret struct {
	name  string
	value string
}

// collectSecrets reads the credentials the fleet handled, in every form they are stored or sent:
// the member's hub token (inside the kubeconfig the hub holds), that
// kubeconfig, and the Ray auth tokens, each also as the base64 a Secret's JSON carries.
func collectSecrets(t *testing.T, f *localfleet.Fleet) []secret {
	t.Helper()
	ctx := t.Context()
	var out []secret
	add := func(name string, value []byte) {
		v := string(value)
		out = append(out, secret{name, v}, secret{name + " (base64)", base64.StdEncoding.EncodeToString(value)})
	}

	var kubeconfigSecret corev1.Secret
	key := client.ObjectKey{Namespace: f.HubNamespace, Name: member}
	if err := f.Hub.Client.Get(ctx, key, &kubeconfigSecret); err != nil {
		t.Fatalf("reading the kubeconfig Secret %s on the hub: %v", key, err)
	}
	kubeconfig := kubeconfigSecret.Data[fleetv1alpha1.DefaultKubeconfigKey]
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatalf("parsing the kubeconfig in Secret %s: %v", key, err)
	}
	// The hub's bootstrap token (a bound token `rayfleet join` requested) lives only here; the
	// tokens the hub mints with it live only in the hub's memory.
	var token []byte
	for user, auth := range cfg.AuthInfos {
		if auth.Token == "" {
			t.Fatalf("the kubeconfig in Secret %s has no token for user %s", key, user)
		}
		token = []byte(auth.Token)
		add("the token in the hub's kubeconfig for "+member, token)
	}
	add("the kubeconfig the hub holds for "+member, kubeconfig)
	if w := base64Window(kubeconfig, token); w != "" {
		out = append(out, secret{"the token inside the base64 of the hub's kubeconfig", w})
	}

	var authSecrets corev1.SecretList
	if err := f.Members[member].Client.List(ctx, &authSecrets, client.InNamespace(ns), client.HasLabels{labels.Cluster}); err != nil {
		t.Fatalf("listing the Ray auth Secrets in %s on %s: %v", ns, member, err)
	}
	authTokens := 0
	for _, s := range authSecrets.Items {
		if v := s.Data[authTokenKey]; len(v) > 0 {
			add("the Ray auth token of "+s.Name, v)
			authTokens++
		}
	}
	if authTokens == 0 {
		t.Fatalf("no Ray auth Secret found in %s on %s", ns, member)
	}
	return out
}

// base64Window returns the part of whole's base64 encoding that encodes part and nothing else
// (part starts on a 3-byte boundary of whole, or the window starts after it): what a log of
// the base64 of whole shows of part, whatever else it cuts off. "" when whole lacks part.
func base64Window(whole, part []byte) string {
	i := strings.Index(string(whole), string(part))
	if i < 0 {
		return ""
	}
	start := (i + 2) / 3 * 3
	end := (i + len(part)) / 3 * 3
	if end <= start {
		return ""
	}
	enc := base64.StdEncoding.EncodeToString(whole)
	return enc[start/3*4 : end/3*4]
}

// needles are the pieces of s searched for: the whole value and, for long values, a prefix, a
// middle and a suffix, so that a log that truncates a body (client-go cuts them at 1 KiB below
// the highest verbosity) still gives the secret away.
func needles(s secret) []string {
	v := s.value
	if len(v) < minNeedle {
		return nil
	}
	out := []string{v}
	const piece = 24
	if len(v) > 2*piece {
		mid := len(v)/2 - piece/2
		out = append(out, v[:piece], v[mid:mid+piece], v[len(v)-piece:])
	}
	return out
}

// hexDumpRow is one row of a hex.Dump, as client-go logs a protobuf body: the offset, up to 16
// bytes in hex, then the printable characters between bars (where a secret shows only in
// pieces of 16).
var hexDumpRow = regexp.MustCompile(`[0-9a-f]{8}  ((?:[0-9a-f]{2}  ?)+) *\|`)

// unhexDump returns the bytes of every hex dump row in text, joined, "" when there is none.
func unhexDump(text string) string {
	var b strings.Builder
	for _, m := range hexDumpRow.FindAllStringSubmatch(text, -1) {
		raw, err := hex.DecodeString(strings.ReplaceAll(m[1], " ", ""))
		if err == nil {
			b.Write(raw)
		}
	}
	return b.String()
}

// contains reports which of secrets appear in text, or in the bytes of a hex dump in it, by
// name.
func contains(text string, secrets []secret) []string {
	var found []string
	dumped := unhexDump(text)
	for _, s := range secrets {
		for _, n := range needles(s) {
			if strings.Contains(text, n) || (dumped != "" && strings.Contains(dumped, n)) {
				found = append(found, s.name)
				break
			}
		}
	}
	return found
}

// scanLogs searches every *.log file under dir (bin/hub, the spokes, `rayfleet join`, the
// control planes) and returns where a secret appears, naming the secret, never its value.
func scanLogs(t *testing.T, dir string, secrets []secret) []string {
	t.Helper()
	var leaks []string
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
			return err
		}
		files++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for line := 1; sc.Scan(); line++ {
			for _, name := range contains(sc.Text(), secrets) {
				leaks = append(leaks, fmt.Sprintf("%s:%d: %s", filepath.Base(path), line, name))
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatalf("reading the logs under %s: %v", dir, err)
	}
	// The hub, the spoke, their API servers and join each log: fewer files means the scan
	// looked in the wrong place.
	if files < 4 {
		t.Fatalf("found only %d log files under %s", files, dir)
	}
	return leaks
}

// scanEvents searches every Event (both APIs) on the hub and the member and returns which one
// shows a secret.
func scanEvents(t *testing.T, f *localfleet.Fleet, secrets []secret) []string {
	t.Helper()
	var leaks []string
	clusters := map[string]client.Client{"hub": f.Hub.Client, member: f.Members[member].Client}
	total := 0
	for cluster, c := range clusters {
		var core corev1.EventList
		if err := c.List(t.Context(), &core); err != nil {
			t.Fatalf("listing Events on %s: %v", cluster, err)
		}
		var events eventsv1.EventList
		if err := c.List(t.Context(), &events); err != nil {
			t.Fatalf("listing events.k8s.io Events on %s: %v", cluster, err)
		}
		objs := make([]client.Object, 0, len(core.Items)+len(events.Items))
		for i := range core.Items {
			objs = append(objs, &core.Items[i])
		}
		for i := range events.Items {
			objs = append(objs, &events.Items[i])
		}
		total += len(objs)
		for _, o := range objs {
			data, err := json.Marshal(o)
			if err != nil {
				t.Fatalf("encoding Event %s/%s: %v", o.GetNamespace(), o.GetName(), err)
			}
			for _, name := range contains(string(data), secrets) {
				leaks = append(leaks, fmt.Sprintf("%s: Event %s/%s: %s", cluster, o.GetNamespace(), o.GetName(), name))
			}
		}
	}
	if total == 0 {
		t.Fatal("no Events at all: the scan would prove nothing")
	}
	return leaks
}

// eventually polls check until it passes, the timeout expires or an agent of f exits.
func eventually(t *testing.T, f *localfleet.Fleet, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		if err := f.Exited(); err != nil {
			gomega.StopTrying(err.Error()).Now()
		}
		check(g)
	}).WithContext(context.Background()).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
}

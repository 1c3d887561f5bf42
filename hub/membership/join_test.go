package membership

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/testing/testcert"
)

// engaged is a ClusterGetter that knows the named clusters only.
type engaged map[string]bool

func (e engaged) GetCluster(_ context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	if e[string(name)] {
		return nil, nil // join only passes the cluster on
	}
	return nil, fmt.Errorf("cluster %s: %w", name, multicluster.ErrClusterNotFound)
}

// testCA returns a self-signed CA certificate, PEM-encoded.
func testCA(t *testing.T) []byte {
	ca, _ := testcert.New(t, "test-ca")
	return ca
}

func TestJoin(t *testing.T) {
	const ns = "rayfleet-system"
	kubeconfigWith := func(mutate func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) []byte {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["m"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: testCA(t)}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
		cfg.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "u"}
		cfg.CurrentContext = "m"
		mutate(cfg.Clusters["m"], cfg.AuthInfos["u"])
		data, err := clientcmd.Write(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	kubeconfig := kubeconfigWith(func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {})
	execPlugin := kubeconfigWith(func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh"}
	})
	secret := func(mutate func(*corev1.Secret)) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1", Labels: map[string]string{fleetv1alpha1.KubeconfigSecretLabel: "true"}},
			Data:       map[string][]byte{fleetv1alpha1.DefaultKubeconfigKey: kubeconfig},
		}
		if mutate != nil {
			mutate(s)
		}
		return s
	}
	member := func(ref fleetv1alpha1.KubeconfigSecretRef) *fleetv1alpha1.MemberCluster {
		return &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"},
			Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: ref}}
	}
	ownRef := fleetv1alpha1.KubeconfigSecretRef{Name: "m1", Key: fleetv1alpha1.DefaultKubeconfigKey}
	tests := []struct {
		name       string
		mc         *fleetv1alpha1.MemberCluster
		secret     *corev1.Secret
		engaged    engaged
		wantJoined bool
		wantReason string
		// wantMessage, when set, is the beginning of the message.
		wantMessage string
	}{
		{name: "engaged", mc: member(ownRef), secret: secret(nil), engaged: engaged{"m1": true}, wantJoined: true},
		{name: "valid but not engaged yet", mc: member(ownRef), secret: secret(nil), engaged: engaged{},
			wantReason: fleetv1alpha1.ReasonEngaging},
		{name: "Secret missing", mc: member(ownRef), engaged: engaged{"m1": true},
			wantReason: fleetv1alpha1.ReasonKubeconfigSecretNotFound},
		{name: "Secret named unlike the member", mc: member(fleetv1alpha1.KubeconfigSecretRef{Name: "other"}),
			secret: secret(nil), engaged: engaged{"m1": true}, wantReason: fleetv1alpha1.ReasonKubeconfigInvalid},
		{name: "another key", mc: member(fleetv1alpha1.KubeconfigSecretRef{Name: "m1", Key: "config"}),
			secret: secret(nil), engaged: engaged{"m1": true}, wantReason: fleetv1alpha1.ReasonKubeconfigInvalid},
		{name: "provider label missing", mc: member(ownRef), secret: secret(func(s *corev1.Secret) { s.Labels = nil }),
			engaged: engaged{"m1": true}, wantReason: fleetv1alpha1.ReasonKubeconfigInvalid},
		{name: "key empty", mc: member(ownRef), secret: secret(func(s *corev1.Secret) { s.Data = nil }),
			engaged: engaged{"m1": true}, wantReason: fleetv1alpha1.ReasonKubeconfigSecretNotFound},
		{name: "kubeconfig does not parse", mc: member(ownRef),
			secret:  secret(func(s *corev1.Secret) { s.Data[fleetv1alpha1.DefaultKubeconfigKey] = []byte("clusters: {") }),
			engaged: engaged{"m1": true}, wantReason: fleetv1alpha1.ReasonKubeconfigInvalid},
		// Joined turns False at once, even while the provider has yet to disengage the member.
		{name: "exec plugin, still engaged", mc: member(ownRef),
			secret:  secret(func(s *corev1.Secret) { s.Data[fleetv1alpha1.DefaultKubeconfigKey] = execPlugin }),
			engaged: engaged{"m1": true}, wantReason: fleetv1alpha1.ReasonKubeconfigRefused,
			wantMessage: "Secret rayfleet-system/m1: kubeconfig refused: users[u].exec: runs a program in the hub's Pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sch, err := scheme.New()
			if err != nil {
				t.Fatal(err)
			}
			b := fake.NewClientBuilder().WithScheme(sch)
			if tt.secret != nil {
				b = b.WithObjects(tt.secret)
			}
			var hub client.Reader = b.Build()
			js, _, err := join(context.Background(), hub, tt.engaged, ns, tt.mc)
			if err != nil {
				t.Fatalf("join: %v", err)
			}
			if js.Joined != tt.wantJoined || js.Reason != tt.wantReason {
				t.Errorf("join = {Joined: %v, Reason: %q, Message: %q}, want {Joined: %v, Reason: %q}",
					js.Joined, js.Reason, js.Message, tt.wantJoined, tt.wantReason)
			}
			if !strings.HasPrefix(js.Message, tt.wantMessage) {
				t.Errorf("message %q, want it to begin with %q", js.Message, tt.wantMessage)
			}
		})
	}
}

func TestRequeueAfter(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	r := &Reconciler{opts: Options{ResyncInterval: 10 * time.Second}}
	tests := []struct {
		name  string
		conds []metav1.Condition
		want  time.Duration
	}{
		{name: "ready member keeps the resync", want: 10 * time.Second, conds: []metav1.Condition{
			cond(fleetv1alpha1.ConditionJoined, metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged),
			cond(fleetv1alpha1.ConditionReachable, metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable),
			cond(fleetv1alpha1.ConditionAgentReady, metav1.ConditionTrue, fleetv1alpha1.ReasonHeartbeatFresh)}},
		{name: "provider still engaging", want: waitingRequeue, conds: []metav1.Condition{
			cond(fleetv1alpha1.ConditionJoined, metav1.ConditionFalse, fleetv1alpha1.ReasonEngaging)}},
		{name: "first heartbeat not there yet", want: waitingRequeue, conds: []metav1.Condition{
			cond(fleetv1alpha1.ConditionJoined, metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged),
			cond(fleetv1alpha1.ConditionReachable, metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable),
			cond(fleetv1alpha1.ConditionAgentReady, metav1.ConditionFalse, fleetv1alpha1.ReasonClusterReportNotFound)}},
		{name: "unreachable member is not probed faster", want: 10 * time.Second, conds: []metav1.Condition{
			cond(fleetv1alpha1.ConditionJoined, metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged),
			cond(fleetv1alpha1.ConditionReachable, metav1.ConditionFalse, fleetv1alpha1.ReasonAPIServerUnreachable),
			cond(fleetv1alpha1.ConditionAgentReady, metav1.ConditionFalse, fleetv1alpha1.ReasonClusterReportNotFound)}},
		{name: "stale heartbeat keeps the resync", want: 10 * time.Second, conds: []metav1.Condition{
			cond(fleetv1alpha1.ConditionJoined, metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged),
			cond(fleetv1alpha1.ConditionReachable, metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable),
			cond(fleetv1alpha1.ConditionAgentReady, metav1.ConditionFalse, fleetv1alpha1.ReasonHeartbeatStale)}},
		{name: "bad kubeconfig keeps the resync", want: 10 * time.Second, conds: []metav1.Condition{
			cond(fleetv1alpha1.ConditionJoined, metav1.ConditionFalse, fleetv1alpha1.ReasonKubeconfigInvalid)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &fleetv1alpha1.MemberClusterStatus{Conditions: tt.conds}
			if got := r.requeueAfter(st); got != tt.want {
				t.Errorf("requeueAfter = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestStillEngaging(t *testing.T) {
	started := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	joined := func(status metav1.ConditionStatus) *fleetv1alpha1.MemberCluster {
		return &fleetv1alpha1.MemberCluster{Status: fleetv1alpha1.MemberClusterStatus{Conditions: []metav1.Condition{
			{Type: fleetv1alpha1.ConditionJoined, Status: status, Reason: fleetv1alpha1.ReasonEngaged}}}}
	}
	engaging := JoinState{Reason: fleetv1alpha1.ReasonEngaging}
	tests := []struct {
		name  string
		mc    *fleetv1alpha1.MemberCluster
		js    JoinState
		after time.Duration
		want  bool
	}{
		{name: "joined member, hub just started: status kept", mc: joined(metav1.ConditionTrue), js: engaging, after: time.Second, want: true},
		{name: "joined member, grace over: not engaged is written", mc: joined(metav1.ConditionTrue), js: engaging, after: EngageGrace},
		{name: "new member: Engaging is written at once", mc: &fleetv1alpha1.MemberCluster{}, js: engaging, after: time.Second},
		{name: "member already not joined", mc: joined(metav1.ConditionFalse), js: engaging, after: time.Second},
		{name: "Secret gone: written at once", mc: joined(metav1.ConditionTrue), after: time.Second,
			js: JoinState{Reason: fleetv1alpha1.ReasonKubeconfigSecretNotFound}},
		{name: "engaged", mc: joined(metav1.ConditionTrue), js: JoinState{Joined: true}, after: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{started: StartedAt(started), opts: Options{Clock: clocktesting.NewFakePassiveClock(started.Add(tt.after))}}
			if got := r.stillEngaging(tt.mc, tt.js); got != tt.want {
				t.Errorf("stillEngaging = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStart(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	s := &Start{}
	clk.Step(time.Hour) // a standby's wait before it leads does not count
	if got := s.Since(clk); got != 0 {
		t.Errorf("first Since = %v, want 0: the first call is the start", got)
	}
	clk.Step(5 * time.Second)
	if got := s.Since(clk); got != 5*time.Second {
		t.Errorf("Since = %v, want 5s", got)
	}
	if got := StartedAt(t0).Since(clk); got != time.Hour+5*time.Second {
		t.Errorf("StartedAt(t0).Since = %v, want 1h0m5s", got)
	}
}

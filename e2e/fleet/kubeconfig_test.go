//go:build e2e

package fleet

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// refusedWatch is how long, once the hub has said it refuses the Secret, the test watches that
// the plugin stays unrun: the hub would have run it on its first request to the member, which
// a member engaged makes within a second (the probe).
const refusedWatch = 5 * time.Second

// A kubeconfig Secret for a new member, the us member's own but with an exec plugin, changes
// nothing it must not: the plugin (a script that leaves a file behind) never runs in bin/hub,
// the member is never engaged, its MemberCluster says Joined=False/KubeconfigRefused naming
// the Secret and users[...].exec, with a Warning event, and the us and eu members stay Ready.
func TestKubeconfigWithExecPluginIsRefused(t *testing.T) {
	const name = "exec-plugin"
	ctx := t.Context()
	hub := fleet.Hub.Client
	ns := labels.DefaultHubNamespace
	began := time.Now()
	joined := func(g gomega.Gomega) {
		for _, m := range []string{memberUS, memberEU} {
			var got fleetv1alpha1.MemberCluster
			g.Expect(hub.Get(ctx, client.ObjectKey{Name: m}, &got)).To(gomega.Succeed())
			// Joined, not Ready: the outage tests take members down once the parallel tests run.
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, fleetv1alpha1.ConditionJoined)).To(gomega.BeTrue(), "%s not Joined", m)
		}
	}
	// The first test of the package to run: the hub may still be engaging the members, each
	// after minting its first token, so they must be Joined before the test can see them stay so.
	eventually(t, joined)

	var us corev1.Secret
	gomega.NewWithT(t).Expect(hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: memberUS}, &us)).To(gomega.Succeed())
	cfg, err := clientcmd.Load(us.Data[fleetv1alpha1.DefaultKubeconfigKey])
	if err != nil {
		t.Fatal(err)
	}
	user := cfg.Contexts[cfg.CurrentContext].AuthInfo
	marker := filepath.Join(t.TempDir(), "plugin-ran")
	script := filepath.Join(t.TempDir(), "plugin.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch '"+marker+"'\nexit 1\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg.AuthInfos[user].Exec = &clientcmdapi.ExecConfig{Command: script, APIVersion: "client.authentication.k8s.io/v1",
		InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{fleetv1alpha1.KubeconfigSecretLabel: labels.True}},
		Data:       map[string][]byte{fleetv1alpha1.DefaultKubeconfigKey: data},
	}
	mc := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretRef{Name: name}}}
	for _, obj := range []client.Object{secret, mc} {
		gomega.NewWithT(t).Expect(hub.Create(ctx, obj)).To(gomega.Succeed())
		t.Cleanup(func() { _ = client.IgnoreNotFound(hub.Delete(ctx, obj)) })
	}

	eventually(t, func(g gomega.Gomega) {
		var got fleetv1alpha1.MemberCluster
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: name}, &got)).To(gomega.Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionJoined)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Status).To(gomega.Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(gomega.Equal(fleetv1alpha1.ReasonKubeconfigRefused))
		g.Expect(c.Message).To(gomega.ContainSubstring("Secret " + ns + "/" + name))
		g.Expect(c.Message).To(gomega.ContainSubstring("users[" + user + "].exec: "))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, fleetv1alpha1.ConditionReady)).To(gomega.BeFalse())
		g.Expect(refusedEvents(g, name, began)).To(gomega.BeNumerically(">=", 1))
	})
	gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
		_, err := os.Stat(marker)
		g.Expect(os.IsNotExist(err)).To(gomega.BeTrue(), "the exec plugin ran in the hub: %v", err)
		joined(g)
	}).WithTimeout(refusedWatch).WithPolling(poll).Should(gomega.Succeed())
}

// refusedEvents counts the KubeconfigRefused Warnings on MemberCluster member since since.
func refusedEvents(g gomega.Gomega, member string, since time.Time) int {
	var list corev1.EventList
	g.Expect(fleet.Hub.Client.List(context.Background(), &list)).To(gomega.Succeed())
	n := 0
	for _, e := range list.Items {
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.LastTimestamp.Time
		}
		if e.InvolvedObject.Kind == "MemberCluster" && e.InvolvedObject.Name == member && e.Type == corev1.EventTypeWarning &&
			e.Reason == fleetv1alpha1.ReasonKubeconfigRefused && !at.Before(since.Truncate(time.Second)) {
			n++
		}
	}
	return n
}

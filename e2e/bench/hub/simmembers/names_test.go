package simmembers

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestNames(t *testing.T) {
	tests := []struct {
		n    int
		want []string
	}{
		{n: 2, want: []string{"sim-000", "sim-001"}},
		{n: 1001, want: []string{"sim-0000", "sim-0001"}},
	}
	for _, tt := range tests {
		got := Names(tt.n)
		if len(got) != tt.n {
			t.Fatalf("Names(%d) has %d names", tt.n, len(got))
		}
		if diff := cmp.Diff(tt.want, got[:2]); diff != "" {
			t.Errorf("Names(%d) (-want +got):\n%s", tt.n, diff)
		}
		if err := validateNames(got); err != nil {
			t.Errorf("Names(%d) are not valid: %v", tt.n, err)
		}
	}
}

func TestValidateNames(t *testing.T) {
	tests := []struct {
		name    string
		members []string
		wantErr bool
	}{
		{name: "distinct", members: []string{"sim-000", "sim-001", "sim-010"}},
		{name: "one a prefix of another without a dash", members: []string{"a", "ab"}},
		{name: "one another's prefix and a dash", members: []string{"a", "a-b"}, wantErr: true},
		{name: "twice", members: []string{"a", "a"}, wantErr: true},
		{name: "empty", members: []string{""}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := validateNames(tt.members); (err != nil) != tt.wantErr {
				t.Errorf("validateNames(%v) = %v, want error %v", tt.members, err, tt.wantErr)
			}
		})
	}
}

func TestMemberOf(t *testing.T) {
	members := []string{"sim-000", "sim-001"}
	tests := []struct {
		backing, wantMember, wantName string
		wantOK                        bool
	}{
		{backing: "sim-001-bench", wantMember: "sim-001", wantName: "bench", wantOK: true},
		{backing: "sim-000-local", wantMember: "sim-000", wantName: "local", wantOK: true},
		{backing: "sim-002-bench"},
		{backing: "bench"},
	}
	for _, tt := range tests {
		m, name, ok := MemberOf(members, tt.backing)
		if m != tt.wantMember || name != tt.wantName || ok != tt.wantOK {
			t.Errorf("MemberOf(%q) = %q, %q, %v; want %q, %q, %v", tt.backing, m, name, ok, tt.wantMember, tt.wantName, tt.wantOK)
		}
	}
	if BackingNamespace("sim-000", "bench") != "sim-000-bench" || BackingName("sim-000", "local") != "sim-000-local" {
		t.Error("backing names are not <member>-<name>")
	}
}

// TestObjectMapping maps objects out to the backing server and back in, and checks what each
// direction leaves.
func TestObjectMapping(t *testing.T) {
	m := newMember("sim-007")
	nsObj := func(name string, lbls map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
	}
	tests := []struct {
		name       string
		obj        client.Object
		namespaced bool
		wantOut    client.Object
	}{
		{
			name:       "namespaced object: its namespace",
			obj:        &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "cm", Labels: map[string]string{"a": "b"}}},
			namespaced: true,
			wantOut:    &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "sim-007-bench", Name: "cm", Labels: map[string]string{"a": "b"}}},
		},
		{
			name:    "namespace: its name, the member label, the name label",
			obj:     nsObj("bench", map[string]string{corev1.LabelMetadataName: "bench"}),
			wantOut: nsObj("sim-007-bench", map[string]string{corev1.LabelMetadataName: "sim-007-bench", MemberLabel: "sim-007"}),
		},
		{
			name:    "cluster-scoped object without labels",
			obj:     nsObj("x", nil),
			wantOut: nsObj("sim-007-x", map[string]string{MemberLabel: "sim-007"}),
		},
		{
			name: "generated name",
			obj:  &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}},
			wantOut: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sim-007-gen-",
				Labels: map[string]string{MemberLabel: "sim-007"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := tt.obj.DeepCopyObject().(client.Object)
			m.outObject(tt.obj, tt.namespaced)
			if diff := cmp.Diff(tt.wantOut, tt.obj); diff != "" {
				t.Errorf("out (-want +got):\n%s", diff)
			}
			if !m.inObject(tt.obj, tt.namespaced) {
				t.Fatal("in: the member's own object is not its")
			}
			if diff := cmp.Diff(orig, tt.obj); diff != "" {
				t.Errorf("out then in is not the object (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("another member's objects are not the member's", func(t *testing.T) {
		other := newMember("sim-008")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "cm"}}
		other.outObject(cm, true)
		if m.inObject(cm, true) || cm.Namespace != "sim-008-bench" {
			t.Errorf("sim-007 took sim-008's ConfigMap in: %s", cm.Namespace)
		}
		ns := nsObj("bench", nil)
		other.outObject(ns, false)
		if m.inObject(ns, false) || ns.Name != "sim-008-bench" {
			t.Errorf("sim-007 took sim-008's Namespace in: %s", ns.Name)
		}
	})
	t.Run("unstructured namespace", func(t *testing.T) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
		u.SetName("bench")
		u.SetLabels(map[string]string{corev1.LabelMetadataName: "bench"})
		m.outObject(u, false)
		if u.GetName() != "sim-007-bench" || u.GetLabels()[corev1.LabelMetadataName] != "sim-007-bench" {
			t.Errorf("out: %v", u.Object)
		}
	})
}

func TestKeyMapping(t *testing.T) {
	m := newMember("sim-001")
	tests := []struct {
		key        client.ObjectKey
		namespaced bool
		want       client.ObjectKey
	}{
		{key: client.ObjectKey{Namespace: "bench", Name: "rs"}, namespaced: true, want: client.ObjectKey{Namespace: "sim-001-bench", Name: "rs"}},
		{key: client.ObjectKey{Name: "local"}, want: client.ObjectKey{Name: "sim-001-local"}},
	}
	for _, tt := range tests {
		if got := m.outKey(tt.key, tt.namespaced); got != tt.want {
			t.Errorf("outKey(%v) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

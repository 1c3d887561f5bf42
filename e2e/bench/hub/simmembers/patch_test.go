package simmembers

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestOutPatch(t *testing.T) {
	m := newMember("sim-003")
	tests := []struct {
		name       string
		pt         types.PatchType
		namespaced bool
		in, want   string
		wantErr    bool
	}{
		{
			name: "merge patch of a namespaced object's spec is left alone", pt: types.MergePatchType, namespaced: true,
			in: `{"spec":{"a":1}}`, want: `{"spec":{"a":1}}`,
		},
		{
			name: "apply patch: the namespace", pt: types.ApplyPatchType, namespaced: true,
			in:   `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"bench"}}`,
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"sim-003-bench"}}`,
		},
		{
			name: "apply patch of a cluster-scoped object: its name, and the label when labels are set",
			pt:   types.ApplyPatchType,
			in:   `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench","labels":{"a":"b"}}}`,
			want: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"sim-003-bench","labels":{"a":"b","sim.rayfleet.io/member":"sim-003"}}}`,
		},
		{
			name: "merge patch dropping every label of a cluster-scoped object keeps the member's",
			pt:   types.MergePatchType,
			in:   `{"metadata":{"labels":null}}`,
			want: `{"metadata":{"labels":{"sim.rayfleet.io/member":"sim-003"}}}`,
		},
		{
			name: "strategic merge patch of a cluster-scoped object's spec", pt: types.StrategicMergePatchType,
			in: `{"spec":{"finalizers":["x"]}}`, want: `{"metadata":{},"spec":{"finalizers":["x"]}}`,
		},
		{
			name: "JSON patch: the namespace, other operations untouched", pt: types.JSONPatchType, namespaced: true,
			in:   `[{"op":"replace","path":"/metadata/namespace","value":"bench"},{"op":"add","path":"/spec/a","value":1}]`,
			want: `[{"op":"replace","path":"/metadata/namespace","value":"sim-003-bench"},{"op":"add","path":"/spec/a","value":1}]`,
		},
		{
			name: "JSON patch of a cluster-scoped object: labels replaced keep the member's, its removal is dropped",
			pt:   types.JSONPatchType,
			in: `[{"op":"replace","path":"/metadata/labels","value":{"a":"b"}},` +
				`{"op":"remove","path":"/metadata/labels/sim.rayfleet.io~1member"},{"op":"test","path":"/metadata/name","value":"x"}]`,
			want: `[{"op":"replace","path":"/metadata/labels","value":{"a":"b","sim.rayfleet.io/member":"sim-003"}},` +
				`{"op":"test","path":"/metadata/name","value":"sim-003-x"}]`,
		},
		{name: "not JSON", pt: types.MergePatchType, in: `{`, wantErr: true},
		{name: "CBOR apply", pt: types.ApplyCBORPatchType, in: `{}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.outPatch(tt.pt, []byte(tt.in), tt.namespaced)
			if (err != nil) != tt.wantErr {
				t.Fatalf("outPatch = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			var gotV, wantV any
			if err := json.Unmarshal(got, &gotV); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.want), &wantV); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantV, gotV); diff != "" {
				t.Errorf("outPatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutListOptions(t *testing.T) {
	m := newMember("sim-003")
	tests := []struct {
		name               string
		in                 client.ListOptions
		namespaced         bool
		wantNS, wantLabels string
		wantFields         string
	}{
		{name: "one namespace", in: client.ListOptions{Namespace: "bench"}, namespaced: true, wantNS: "sim-003-bench"},
		{name: "all namespaces stay all", namespaced: true},
		{
			name: "labels of a namespaced kind are the caller's",
			in:   client.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"a": "b"})}, namespaced: true,
			wantLabels: "a=b",
		},
		{name: "a cluster-scoped kind selects the member's objects", wantLabels: "sim.rayfleet.io/member=sim-003"},
		{
			name:       "field selectors on the namespace and a cluster-scoped name",
			in:         client.ListOptions{FieldSelector: fields.ParseSelectorOrDie("metadata.name=bench,status.phase=Active")},
			wantLabels: "sim.rayfleet.io/member=sim-003", wantFields: "metadata.name=sim-003-bench,status.phase=Active",
		},
		{
			name: "a namespaced kind's name is not mapped", namespaced: true,
			in:         client.ListOptions{FieldSelector: fields.ParseSelectorOrDie("metadata.namespace=bench,metadata.name=rs")},
			wantFields: "metadata.name=rs,metadata.namespace=sim-003-bench",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo := tt.in
			if err := m.outListOptions(&lo, tt.namespaced); err != nil {
				t.Fatal(err)
			}
			gotLabels, gotFields := "", ""
			if lo.LabelSelector != nil {
				gotLabels = lo.LabelSelector.String()
			}
			if lo.FieldSelector != nil {
				gotFields = lo.FieldSelector.String()
			}
			if lo.Namespace != tt.wantNS || gotLabels != tt.wantLabels || gotFields != tt.wantFields {
				t.Errorf("namespace %q labels %q fields %q; want %q %q %q", lo.Namespace, gotLabels, gotFields,
					tt.wantNS, tt.wantLabels, tt.wantFields)
			}
		})
	}
}

func TestInError(t *testing.T) {
	m := newMember("sim-003")
	gr := schema.GroupResource{Resource: "namespaces"}
	err := m.inError(apierrors.NewNotFound(gr, "sim-003-bench"))
	if !apierrors.IsNotFound(err) {
		t.Fatalf("inError lost the NotFound: %v", err)
	}
	var se *apierrors.StatusError
	if !asStatus(err, &se) || se.ErrStatus.Details.Name != "bench" || se.ErrStatus.Message != `namespaces "bench" not found` {
		t.Errorf("inError = %#v", err)
	}
	if m.inError(nil) != nil {
		t.Error("inError(nil) is not nil")
	}
}

// asStatus is errors.As for a StatusError.
func asStatus(err error, target **apierrors.StatusError) bool {
	se, ok := err.(*apierrors.StatusError) //nolint:errorlint // inError returns the StatusError itself
	*target = se
	return ok
}

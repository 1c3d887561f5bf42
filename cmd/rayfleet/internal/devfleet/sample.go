package devfleet

import (
	"bufio"
	"bytes"
	"context"
	_ "embed" // the sample is a YAML file users can read and copy
	"errors"
	"fmt"
	"io"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// sampleYAML is the PlacementPolicy and RayService `dev up` applies to the hub.
//
//go:embed sample.yaml
var sampleYAML []byte

// trafficSampleYAML is what `dev up --traffic` applies besides: a BlueGreen rollout with
// traffic through the hub's Gateway.
//
//go:embed traffic-sample.yaml
var trafficSampleYAML []byte

// Sample is what `dev up` applies to the hub.
type Sample struct {
	// Policy places the RayService on two clusters in different regions.
	Policy *fleetv1alpha1.PlacementPolicy
	// Service is a small RayService naming Policy in its placement-policy annotation.
	Service *rayv1.RayService
	// MemberConfigMap, when set, is what each member needs in the sample's namespace before
	// the RayService lands there (the Serve app's code); see prepareMembers.
	MemberConfigMap *corev1.ConfigMap

	// source is the YAML the sample was decoded from, copied into the state directory.
	source []byte
}

// LoadSample decodes and checks the embedded sample.
func LoadSample() (*Sample, error) { return loadSample(sampleYAML) }

// LoadTrafficSample decodes and checks the embedded sample of `dev up --traffic`.
func LoadTrafficSample() (*Sample, error) { return loadSample(trafficSampleYAML) }

// loadSample decodes one embedded sample and keeps its source.
func loadSample(data []byte) (*Sample, error) {
	s, err := decodeSample(data)
	if err != nil {
		return nil, err
	}
	s.source = data
	return s, nil
}

// decodeSample decodes a PlacementPolicy and a RayService, strictly (an unknown field is an
// error), and checks that they fit together and that the RayService is one KubeRay accepts.
func decodeSample(data []byte) (*Sample, error) {
	s, err := parseSample(data)
	if err != nil {
		return nil, err
	}
	return s, s.check()
}

// parseSample is decodeSample without the check.
func parseSample(data []byte) (*Sample, error) {
	s := &Sample{}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the sample: %w", err)
		}
		var tm metav1.TypeMeta
		if err = yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("decoding the sample: %w", err)
		}
		switch tm.GroupVersionKind() {
		case fleetv1alpha1.GroupVersion.WithKind("PlacementPolicy"):
			s.Policy = &fleetv1alpha1.PlacementPolicy{}
			err = yaml.UnmarshalStrict(doc, s.Policy)
		case rayv1.GroupVersion.WithKind("RayService"):
			s.Service = &rayv1.RayService{}
			err = yaml.UnmarshalStrict(doc, s.Service)
		case schema.GroupVersionKind{}:
			continue // a document of comments only
		default:
			err = fmt.Errorf("unexpected %s", tm.GroupVersionKind())
		}
		if err != nil {
			return nil, fmt.Errorf("decoding the sample's %s: %w", tm.Kind, err)
		}
	}
	return s, nil
}

// check says what is wrong with the sample, if anything.
func (s *Sample) check() error {
	if s.Policy == nil || s.Service == nil {
		return errors.New("the sample needs a PlacementPolicy and a RayService")
	}
	if got := s.Service.Annotations[labels.PlacementPolicy]; got != s.Policy.Name {
		return fmt.Errorf("RayService %s/%s: annotation %s is %q, want the PlacementPolicy's name %q",
			s.Service.Namespace, s.Service.Name, labels.PlacementPolicy, got, s.Policy.Name)
	}
	if s.Service.Namespace == "" || s.Service.Namespace != s.Policy.Namespace {
		return fmt.Errorf("the PlacementPolicy (namespace %q) and the RayService (namespace %q) need one namespace",
			s.Policy.Namespace, s.Service.Namespace)
	}
	if err := validation.RayServiceMetadata(s.Service.ObjectMeta); err != nil {
		return fmt.Errorf("RayService %s/%s: %w", s.Service.Namespace, s.Service.Name, err)
	}
	if err := validation.RayServiceSpec(s.Service); err != nil {
		return fmt.Errorf("RayService %s/%s: %w", s.Service.Namespace, s.Service.Name, err)
	}
	return nil
}

// Namespace is the sample's namespace.
func (s *Sample) Namespace() string { return s.Service.Namespace }

// apply creates the sample's objects on the hub; ones that exist are left as they are.
func (s *Sample) apply(ctx context.Context, hub client.Client) error {
	for _, obj := range []client.Object{s.Policy.DeepCopy(), s.Service.DeepCopy()} {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		if err := hub.Create(ctx, obj); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("creating %s %s/%s on the hub: %w", kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

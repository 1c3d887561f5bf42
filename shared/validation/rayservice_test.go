package validation

import (
	"errors"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

const (
	specInvalid     = "The RayService spec is invalid: "
	metadataInvalid = "The RayService metadata is invalid: "
	timeoutPath     = "metadata.annotations[ray.io/initializing-timeout]"
)

// sampleServeConfig is a typical serveConfigV2.
const sampleServeConfig = `applications:
  - name: fruit
    import_path: fruit.deployment_graph
    route_prefix: /fruit
    runtime_env:
      working_dir: "https://github.com/ray-project/test_dag/archive/HEAD.zip"
    deployments:
      - name: MangoStand
        num_replicas: 1
`

// rayService is the valid starting point of the RayService cases: the cluster() spec and a
// sample Serve config.
func rayService() *rayv1.RayService {
	return &rayv1.RayService{
		ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns"},
		Spec: rayv1.RayServiceSpec{
			ServeConfigV2:  sampleServeConfig,
			RayClusterSpec: cluster().Obj().Spec,
		},
	}
}

// incremental makes rs ask for an incremental upgrade with valid options.
func incremental(rs *rayv1.RayService) {
	rs.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
	rs.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{
		Type: ptr.To(rayv1.RayServiceNewClusterWithIncrementalUpgrade),
		ClusterUpgradeOptions: &rayv1.ClusterUpgradeOptions{
			MaxSurgePercent:  ptr.To[int32](50),
			StepSizePercent:  ptr.To[int32](10),
			IntervalSeconds:  ptr.To[int32](30),
			GatewayClassName: "istio",
		},
	}
}

// withOptions makes rs incremental, then lets change edit the options.
func withOptions(change func(o *rayv1.ClusterUpgradeOptions)) func(rs *rayv1.RayService) {
	return func(rs *rayv1.RayService) {
		incremental(rs)
		change(rs.Spec.UpgradeStrategy.ClusterUpgradeOptions)
	}
}

func TestMaxRayServiceNameLength(t *testing.T) {
	if MaxRayServiceNameLength != 47 {
		t.Errorf("MaxRayServiceNameLength = %d, want KubeRay's 47", MaxRayServiceNameLength)
	}
}

func TestRayServiceMetadata(t *testing.T) {
	dns1035 := "must be a valid DNS-1035 label: " + joinMessages(k8svalidation.IsDNS1035Label("Svc"))
	long := strings.Repeat("a", 48)
	tests := []struct {
		name        string
		svc         string
		annotations map[string]string
		want        string
	}{
		{name: "ordinary name", svc: "rayservice-sample"},
		{name: "exactly 47 characters", svc: strings.Repeat("a", 47)},
		{
			name: "48 characters", svc: long,
			want: metadataInvalid + `metadata.name: Invalid value: "` + long + `": must be no more than 47 characters (got 48), ` +
				`so that its RayClusters' names, "<name>-<5 characters>", stay within the 53 characters a RayCluster name may have`,
		},
		{name: "upper case", svc: "Svc", want: metadataInvalid + `metadata.name: Invalid value: "Svc": ` + dns1035},
		{name: "valid timeout", svc: "svc", annotations: map[string]string{labels.InitializingTimeout: "5m"}},
		{name: "empty timeout means none", svc: "svc", annotations: map[string]string{labels.InitializingTimeout: ""}},
		{
			name: "bad timeout", svc: "svc", annotations: map[string]string{labels.InitializingTimeout: "abc"},
			want: metadataInvalid + timeoutPath + `: Invalid value: "abc": must be a duration such as "5m" or "1h", or a whole number of seconds such as "300"`,
		},
		{
			name: "the name is checked before the annotation", svc: "Svc", annotations: map[string]string{labels.InitializingTimeout: "abc"},
			want: metadataInvalid + `metadata.name: Invalid value: "Svc": ` + dns1035,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := RayServiceMetadata(metav1.ObjectMeta{Name: tt.svc, Namespace: "ns", Annotations: tt.annotations})
			checkErr(t, err, tt.want)
			var invalid *InvalidRayServiceError
			if err != nil && (!errors.As(err, &invalid) || invalid.Part != RayServiceMetadataPart) {
				t.Errorf("error %v is not an InvalidRayServiceError about the metadata", err)
			}
		})
	}
}

func TestInitializingTimeout(t *testing.T) {
	const (
		badFormat = `must be a duration such as "5m" or "1h", or a whole number of seconds such as "300"`
		positive  = "must be positive"
	)
	tests := []struct {
		value   *string // nil: no annotation
		want    time.Duration
		wantOK  bool
		wantErr string
	}{
		{value: nil},
		{value: ptr.To("")},
		{value: ptr.To("5m"), want: 5 * time.Minute, wantOK: true},
		{value: ptr.To("1h30m"), want: 90 * time.Minute, wantOK: true},
		{value: ptr.To("300"), want: 300 * time.Second, wantOK: true},
		{value: ptr.To("1"), want: time.Second, wantOK: true},
		{value: ptr.To("500ms"), want: 500 * time.Millisecond, wantOK: true},
		{value: ptr.To("abc"), wantErr: badFormat},
		{value: ptr.To("5 m"), wantErr: badFormat},
		{value: ptr.To("1.5"), wantErr: badFormat},
		{value: ptr.To("-5"), wantErr: positive},
		{value: ptr.To("-5m"), wantErr: positive},
		{value: ptr.To("0"), wantErr: positive},
		{value: ptr.To("0s"), wantErr: positive},
		{value: ptr.To("99999999999999"), wantErr: "is too long a timeout"},
	}
	for _, tt := range tests {
		name := "absent"
		annotations := map[string]string{}
		if tt.value != nil {
			name = *tt.value
			annotations[labels.InitializingTimeout] = *tt.value
		}
		t.Run(name, func(t *testing.T) {
			got, ok, err := InitializingTimeout(annotations)
			want := ""
			if tt.wantErr != "" {
				want = timeoutPath + `: Invalid value: "` + *tt.value + `": ` + tt.wantErr
			}
			checkErr(t, err, want)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("InitializingTimeout = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// serviceCase is one RayServiceSpec case: mutate edits a valid RayService; want is the whole
// message ("" when valid).
type serviceCase struct {
	name   string
	mutate func(rs *rayv1.RayService)
	want   string
}

func runServiceCases(t *testing.T, cases []serviceCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			rs := rayService()
			if tt.mutate != nil {
				tt.mutate(rs)
			}
			err := RayServiceSpec(rs)
			checkErr(t, err, tt.want)
			var invalid *InvalidRayServiceError
			if err != nil && (!errors.As(err, &invalid) || invalid.Part != RayServiceSpecPart) {
				t.Errorf("error %v is not an InvalidRayServiceError about the spec", err)
			}
		})
	}
}

func TestRayServiceSpec(t *testing.T) {
	const badValue = "bad value!"
	valueMsg := joinMessages(k8svalidation.IsValidLabelValue(badValue))
	runServiceCases(t, []serviceCase{
		{name: "valid"},
		{name: "no serve config", mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = "" }},
		{
			name: "Kubernetes token auth",
			mutate: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.RayVersion = "2.55.0"
				rs.Spec.RayClusterSpec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
			},
			want: specInvalid + "spec.rayClusterConfig.authOptions.enableK8sTokenAuth: Forbidden: Kubernetes token auth is not supported for a RayService",
		},
		{
			name: "the embedded cluster spec is checked, under rayClusterConfig",
			mutate: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers = nil
			},
			want: specInvalid + "spec.rayClusterConfig.headGroupSpec.template.spec.containers: Required value: " +
				"the head group needs at least one container; the first one runs Ray",
		},
		{
			name: "every path of an aggregate moves under rayClusterConfig",
			mutate: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Labels = map[string]string{"a": badValue, "b": badValue}
			},
			want: specInvalid + `[spec.rayClusterConfig.workerGroupSpecs[0].labels[a]: Invalid value: "bad value!": worker group "g": invalid label value: ` + valueMsg +
				`, spec.rayClusterConfig.workerGroupSpecs[0].labels[b]: Invalid value: "bad value!": worker group "g": invalid label value: ` + valueMsg + `]`,
		},
		{
			name: "the RayService's annotations count for the cluster spec",
			mutate: func(rs *rayv1.RayService) {
				rs.Annotations = map[string]string{labels.FTEnabled: "true"}
				rs.Spec.RayClusterSpec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379"}
			},
			want: specInvalid + `metadata.annotations[ray.io/ft-enabled]: Invalid value: "true": must not be set together with ` +
				"spec.gcsFaultToleranceOptions; configure GCS fault tolerance with gcsFaultToleranceOptions only",
		},
		{
			name: "the cluster's own upgrade strategy",
			mutate: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(rayv1.RayClusterRecreate)}
			},
			want: specInvalid + `spec.rayClusterConfig.upgradeStrategy.type: Invalid value: "Recreate": must not be set: ` +
				"a RayService upgrades by replacing its RayCluster; use spec.upgradeStrategy instead",
		},
		{
			name: "head Service name",
			mutate: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.HeadGroupSpec.HeadService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}
			},
			want: specInvalid + `spec.rayClusterConfig.headGroupSpec.headService.metadata.name: Invalid value: "mine": ` +
				"must not be set in a RayService: the head Services are named after the RayService and its RayClusters",
		},
		{
			name: "head Service without a name",
			mutate: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.HeadGroupSpec.HeadService = &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}}}
			},
		},
		{
			name: "unknown upgrade type",
			mutate: func(rs *rayv1.RayService) {
				rs.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.RayServiceUpgradeType("BlueGreen"))}
			},
			want: specInvalid + `spec.upgradeStrategy.type: Unsupported value: "BlueGreen": supported values: ` +
				`"NewClusterWithIncrementalUpgrade", "NewCluster", "None"`,
		},
		{
			name: "None and NewCluster need no options",
			mutate: func(rs *rayv1.RayService) {
				rs.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.RayServiceUpgradeNone)}
			},
		},
		{
			name:   "strategy without a type",
			mutate: func(rs *rayv1.RayService) { rs.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{} },
		},
		{name: "deletion delay 0", mutate: func(rs *rayv1.RayService) { rs.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](0) }},
		{
			name:   "negative deletion delay",
			mutate: func(rs *rayv1.RayService) { rs.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](-1) },
			want:   specInvalid + "spec.rayClusterDeletionDelaySeconds: Invalid value: -1: must not be negative",
		},
	})
}

func TestRayServiceSpecIncrementalUpgrade(t *testing.T) {
	const opts = "spec.upgradeStrategy.clusterUpgradeOptions"
	runServiceCases(t, []serviceCase{
		{name: "valid", mutate: incremental},
		{name: "maxSurgePercent defaults to 100", mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) {
			o.MaxSurgePercent, o.StepSizePercent = nil, ptr.To[int32](100)
		})},
		{name: "all at once", mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) {
			o.MaxSurgePercent, o.StepSizePercent = ptr.To[int32](100), ptr.To[int32](100)
		})},
		{name: "zero percents are in range", mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) {
			o.MaxSurgePercent, o.StepSizePercent = ptr.To[int32](0), ptr.To[int32](0)
		})},
		{
			name: "autoscaling off",
			mutate: func(rs *rayv1.RayService) {
				incremental(rs)
				rs.Spec.RayClusterSpec.EnableInTreeAutoscaling = nil
			},
			want: specInvalid + "spec.rayClusterConfig.enableInTreeAutoscaling: Invalid value: false: must be true for " +
				"upgradeStrategy.type NewClusterWithIncrementalUpgrade: the new cluster is scaled by the Ray autoscaler as its Serve target capacity grows",
		},
		{
			name: "options missing",
			mutate: func(rs *rayv1.RayService) {
				incremental(rs)
				rs.Spec.UpgradeStrategy.ClusterUpgradeOptions = nil
			},
			want: specInvalid + opts + ": Required value: required for upgradeStrategy.type NewClusterWithIncrementalUpgrade",
		},
		{
			name:   "maxSurgePercent below 0",
			mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) { o.MaxSurgePercent = ptr.To[int32](-1) }),
			want:   specInvalid + opts + ".maxSurgePercent: Invalid value: -1: must be between 0 and 100",
		},
		{
			name:   "maxSurgePercent above 100",
			mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) { o.MaxSurgePercent = ptr.To[int32](101) }),
			want:   specInvalid + opts + ".maxSurgePercent: Invalid value: 101: must be between 0 and 100",
		},
		{
			name:   "stepSizePercent missing",
			mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) { o.StepSizePercent = nil }),
			want:   specInvalid + opts + ".stepSizePercent: Required value: the share of traffic moved to the new cluster at each step",
		},
		{
			name:   "stepSizePercent below 0",
			mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) { o.StepSizePercent = ptr.To[int32](-10) }),
			want:   specInvalid + opts + ".stepSizePercent: Invalid value: -10: must be between 0 and 100",
		},
		{
			name: "stepSizePercent above 100",
			mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) {
				o.MaxSurgePercent, o.StepSizePercent = ptr.To[int32](100), ptr.To[int32](150)
			}),
			want: specInvalid + opts + ".stepSizePercent: Invalid value: 150: must be between 0 and 100",
		},
		{
			name:   "stepSizePercent above maxSurgePercent",
			mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) { o.StepSizePercent = ptr.To[int32](60) }),
			want: specInvalid + opts + ".stepSizePercent: Invalid value: 60: must not be greater than maxSurgePercent (50): " +
				"traffic never moves past the capacity the new cluster has been given",
		},
		{
			name:   "intervalSeconds missing",
			mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) { o.IntervalSeconds = nil }),
			want:   specInvalid + opts + ".intervalSeconds: Required value: the time between two traffic steps",
		},
		{
			name:   "intervalSeconds 0",
			mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) { o.IntervalSeconds = ptr.To[int32](0) }),
			want:   specInvalid + opts + ".intervalSeconds: Invalid value: 0: must be greater than 0",
		},
		{
			name:   "intervalSeconds negative",
			mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) { o.IntervalSeconds = ptr.To[int32](-30) }),
			want:   specInvalid + opts + ".intervalSeconds: Invalid value: -30: must be greater than 0",
		},
		{
			name:   "gatewayClassName missing",
			mutate: withOptions(func(o *rayv1.ClusterUpgradeOptions) { o.GatewayClassName = "" }),
			want: specInvalid + opts + ".gatewayClassName: Required value: " +
				"the GatewayClass of the Gateway that splits traffic between the old and the new cluster",
		},
		{
			name: "options are not checked for another strategy",
			mutate: func(rs *rayv1.RayService) {
				incremental(rs)
				rs.Spec.UpgradeStrategy.Type = ptr.To(rayv1.RayServiceNewCluster)
				rs.Spec.UpgradeStrategy.ClusterUpgradeOptions.StepSizePercent = ptr.To[int32](500)
			},
		},
	})
}

func TestRayServiceSpecServeConfig(t *testing.T) {
	const path = "spec.serveConfigV2"
	large := largeServeConfig(MaxServeConfigV2Bytes - 1<<10)
	runServiceCases(t, []serviceCase{
		{name: "only blanks counts as unset", mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = " \n\t\n" }},
		{name: "a mapping without applications", mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = "http_options:\n  port: 8000\n" }},
		{name: "an empty application list", mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = "applications: []\n" }},
		{name: "just under the size limit", mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = large }},
		{
			// The parser names the line where the list it could not finish began.
			name: "malformed YAML names the line",
			mutate: func(rs *rayv1.RayService) {
				rs.Spec.ServeConfigV2 = "applications:\n  - name: a\n   route_prefix: /a\n"
			},
			want: specInvalid + path + ": Invalid value: is not valid YAML: yaml: line 2: did not find expected '-' indicator",
		},
		{
			name:   "a tab in the indentation",
			mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = "applications:\n\t- name: a\n" },
			want:   specInvalid + path + ": Invalid value: is not valid YAML: yaml: line 2: found character that cannot start any token",
		},
		{
			name:   "an unclosed flow sequence",
			mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = "applications: [\n" },
			want:   specInvalid + path + ": Invalid value: is not valid YAML: yaml: line 1: did not find expected node content",
		},
		{
			name:   "a scalar",
			mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = "fruit.deployment_graph" },
			want:   specInvalid + path + `: Invalid value: must be a YAML mapping (a Serve config with an "applications" list), got a string`,
		},
		{
			name:   "a number",
			mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = "42" },
			want:   specInvalid + path + `: Invalid value: must be a YAML mapping (a Serve config with an "applications" list), got a number`,
		},
		{
			name:   "a top-level list",
			mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = "- name: a\n  import_path: a.b\n" },
			want:   specInvalid + path + `: Invalid value: must be a YAML mapping (a Serve config with an "applications" list), got a list`,
		},
		{
			name:   "only comments",
			mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = "# nothing yet\n" },
			want: specInvalid + path + `: Invalid value: must be a YAML mapping (a Serve config with an "applications" list), ` +
				"got a document with no content",
		},
		{
			name:   "applications as a mapping",
			mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = "applications:\n  name: a\n" },
			want:   specInvalid + path + "[applications]: Invalid value: must be a list of Serve applications, got a mapping",
		},
		{
			name:   "applications without a value",
			mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = "applications:\n" },
			want:   specInvalid + path + "[applications]: Invalid value: must be a list of Serve applications, got null",
		},
		{
			name:   "applications as a string",
			mutate: func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = "applications: fruit\n" },
			want:   specInvalid + path + "[applications]: Invalid value: must be a list of Serve applications, got a string",
		},
	})
}

// largeServeConfig is a valid Serve config of at least size bytes: many applications.
func largeServeConfig(size int) string {
	var b strings.Builder
	b.WriteString("applications:\n")
	for i := 0; b.Len() < size; i++ {
		b.WriteString("  - name: app-")
		b.WriteString(strings.Repeat("x", 8))
		b.WriteString("\n    import_path: module.deployment\n    route_prefix: /app\n")
		b.WriteString("    runtime_env:\n      env_vars:\n        PAYLOAD: \"" + strings.Repeat("p", 200) + "\"\n")
	}
	return b.String()
}

func TestRayServiceSpecNil(t *testing.T) {
	checkErr(t, RayServiceSpec(nil), specInvalid+"spec: Required value: no RayService given")
}

func TestInvalidRayServiceErrorUnwraps(t *testing.T) {
	rs := rayService()
	rs.Spec.RayClusterDeletionDelaySeconds = ptr.To[int32](-5)
	var fe *field.Error
	if err := RayServiceSpec(rs); !errors.As(err, &fe) || fe.Field != "spec.rayClusterDeletionDelaySeconds" {
		t.Errorf("RayServiceSpec = %v; want it to unwrap to the field error", err)
	}
}

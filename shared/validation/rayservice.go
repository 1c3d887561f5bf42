package validation

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// MaxRayServiceNameLength is the longest RayService name: its RayClusters are named
// "<name>-<5 random characters>", and RayCluster names are limited to MaxRayClusterNameLength.
const MaxRayServiceNameLength = MaxRayClusterNameLength - len("-xxxxx")

// Parts of a RayService an InvalidRayServiceError can be about.
const (
	RayServiceMetadataPart = "metadata"
	RayServiceSpecPart     = "spec"
)

// Field paths of the RayService rules.
var (
	rayClusterConfigPath = specPath.Child("rayClusterConfig")
	upgradeStrategyPath  = specPath.Child("upgradeStrategy")
	upgradeOptionsPath   = upgradeStrategyPath.Child("clusterUpgradeOptions")
)

// InvalidRayServiceError is a RayService that fails validation. Its message starts the way
// KubeRay's do ("The RayService spec is invalid: ..."), so users who search for KubeRay's
// messages find ours; Err is the rule that failed, a *field.Error naming the field (or, for
// bad worker-group labels, an aggregate of them).
type InvalidRayServiceError struct {
	// Part is RayServiceMetadataPart or RayServiceSpecPart.
	Part string
	// Err is the rule that failed.
	Err error
}

// Error implements error.
func (e *InvalidRayServiceError) Error() string {
	return "The RayService " + e.Part + " is invalid: " + e.Err.Error()
}

// Unwrap returns the rule that failed.
func (e *InvalidRayServiceError) Unwrap() error { return e.Err }

// RayServiceMetadata checks a RayService's name (short enough for the names of the RayClusters
// made from it, and a DNS-1035 label as their Services' names must be) and the format of its
// ray.io/initializing-timeout annotation.
func RayServiceMetadata(objMeta metav1.ObjectMeta) error {
	path := field.NewPath("metadata", "name")
	if len(objMeta.Name) > MaxRayServiceNameLength {
		return &InvalidRayServiceError{Part: RayServiceMetadataPart, Err: field.Invalid(path, objMeta.Name, fmt.Sprintf(
			"must be no more than %d characters (got %d), so that its RayClusters' names, \"<name>-<5 characters>\", "+
				"stay within the %d characters a RayCluster name may have",
			MaxRayServiceNameLength, len(objMeta.Name), MaxRayClusterNameLength))}
	}
	if msgs := k8svalidation.IsDNS1035Label(objMeta.Name); len(msgs) > 0 {
		return &InvalidRayServiceError{Part: RayServiceMetadataPart,
			Err: field.Invalid(path, objMeta.Name, "must be a valid DNS-1035 label: "+joinMessages(msgs))}
	}
	if _, _, err := InitializingTimeout(objMeta.Annotations); err != nil {
		return &InvalidRayServiceError{Part: RayServiceMetadataPart, Err: err}
	}
	return nil
}

// InitializingTimeout reads the ray.io/initializing-timeout annotation: how long a RayService
// may take to become ready before it is given up on. The value is a Go duration ("5m", "1h30m")
// or a whole number of seconds ("300"), and must be positive. ok is false when the annotation
// is absent or empty (no timeout); err names the annotation and the value when it is malformed.
func InitializingTimeout(annotations map[string]string) (timeout time.Duration, ok bool, err error) {
	value := annotations[labels.InitializingTimeout]
	if value == "" {
		return 0, false, nil
	}
	path := annotationPath(labels.InitializingTimeout)
	d, durErr := time.ParseDuration(value)
	if durErr != nil {
		seconds, intErr := strconv.ParseInt(value, 10, 64)
		if intErr != nil {
			return 0, false, field.Invalid(path, value,
				`must be a duration such as "5m" or "1h", or a whole number of seconds such as "300"`)
		}
		if seconds > math.MaxInt64/int64(time.Second) {
			return 0, false, field.Invalid(path, value, "is too long a timeout")
		}
		d = time.Duration(seconds) * time.Second
	}
	if d <= 0 {
		return 0, false, field.Invalid(path, value, "must be positive")
	}
	return d, true, nil
}

// serviceCheck is one family of RayService spec rules; RayServiceSpec runs them in order.
type serviceCheck func(rs *rayv1.RayService) error

// RayServiceSpec checks a RayService spec against the rules KubeRay v1.6.2 enforces before
// reconciling one, in KubeRay's order: no Kubernetes token auth, the embedded RayCluster spec,
// no head Service name, the upgrade strategy and its incremental-upgrade options (checked
// whenever the type asks for an incremental upgrade; KubeRay checks them only behind its alpha
// feature gate). Three rules KubeRay lacks catch, when the RayService is applied, what would
// otherwise fail later: rayClusterConfig.upgradeStrategy must be unset (KubeRay rejects it on
// the RayCluster it has already created), stepSizePercent may not exceed maxSurgePercent, and
// serveConfigV2 must be a YAML mapping whose applications, if any, are a list.
func RayServiceSpec(rs *rayv1.RayService) error {
	if rs == nil {
		return &InvalidRayServiceError{Part: RayServiceSpecPart, Err: field.Required(specPath, "no RayService given")}
	}
	checks := []serviceCheck{
		k8sTokenAuth, embeddedClusterSpec, headServiceName,
		upgradeType, deletionDelay, incrementalUpgradeOptions, serveConfig,
	}
	for _, check := range checks {
		if err := check(rs); err != nil {
			return &InvalidRayServiceError{Part: RayServiceSpecPart, Err: err}
		}
	}
	return nil
}

// k8sTokenAuth rejects Kubernetes token auth, which KubeRay does not support for a RayService.
func k8sTokenAuth(rs *rayv1.RayService) error {
	if rayspec.K8sTokenAuth(rs.Spec.RayClusterSpec.AuthOptions) {
		return field.Forbidden(rayClusterConfigPath.Child("authOptions", "enableK8sTokenAuth"),
			"Kubernetes token auth is not supported for a RayService")
	}
	return nil
}

// embeddedClusterSpec runs the RayCluster rules on rayClusterConfig, with the RayService's
// annotations (they are copied onto its RayClusters), and reports the fields under
// spec.rayClusterConfig. A RayService replaces its cluster to upgrade it, so the cluster's own
// upgradeStrategy must be unset, as it must be on any RayCluster a RayService creates.
func embeddedClusterSpec(rs *rayv1.RayService) error {
	spec := &rs.Spec.RayClusterSpec
	if err := RayClusterSpec(spec, rs.Annotations); err != nil {
		return underRayClusterConfig(err)
	}
	if s := spec.UpgradeStrategy; s != nil && s.Type != nil {
		return field.Invalid(rayClusterConfigPath.Child("upgradeStrategy", "type"), *s.Type,
			"must not be set: a RayService upgrades by replacing its RayCluster; use spec.upgradeStrategy instead")
	}
	return nil
}

// underRayClusterConfig moves the spec.* paths of RayCluster field errors under
// spec.rayClusterConfig, where they are in a RayService. Other errors are returned unchanged.
func underRayClusterConfig(err error) error {
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		errs := agg.Errors()
		moved := make([]error, len(errs))
		for i, e := range errs {
			moved[i] = underRayClusterConfig(e)
		}
		return utilerrors.NewAggregate(moved)
	}
	var fe *field.Error
	if !errors.As(err, &fe) {
		return err
	}
	moved := *fe
	if rest, ok := strings.CutPrefix(fe.Field, specPath.String()+"."); ok {
		moved.Field = rayClusterConfigPath.String() + "." + rest
	}
	return &moved
}

// headServiceName rejects a name for the head Service: a RayService names the head Service of
// each of its clusters after the cluster, and its own after itself.
func headServiceName(rs *rayv1.RayService) error {
	if hs := rs.Spec.RayClusterSpec.HeadGroupSpec.HeadService; hs != nil && hs.Name != "" {
		return field.Invalid(rayClusterConfigPath.Child("headGroupSpec", "headService", "metadata", "name"), hs.Name,
			"must not be set in a RayService: the head Services are named after the RayService and its RayClusters")
	}
	return nil
}

// upgradeType checks spec.upgradeStrategy.type.
func upgradeType(rs *rayv1.RayService) error {
	s := rs.Spec.UpgradeStrategy
	if s == nil || s.Type == nil {
		return nil
	}
	switch *s.Type {
	case rayv1.RayServiceNewClusterWithIncrementalUpgrade, rayv1.RayServiceNewCluster, rayv1.RayServiceUpgradeNone:
		return nil
	}
	return field.NotSupported(upgradeStrategyPath.Child("type"), *s.Type, []rayv1.RayServiceUpgradeType{
		rayv1.RayServiceNewClusterWithIncrementalUpgrade, rayv1.RayServiceNewCluster, rayv1.RayServiceUpgradeNone,
	})
}

// deletionDelay checks spec.rayClusterDeletionDelaySeconds.
func deletionDelay(rs *rayv1.RayService) error {
	if d := rs.Spec.RayClusterDeletionDelaySeconds; d != nil && *d < 0 {
		return field.Invalid(specPath.Child("rayClusterDeletionDelaySeconds"), *d, "must not be negative")
	}
	return nil
}

// incrementalUpgradeOptions checks what an incremental upgrade needs: the autoscaler (the new
// cluster grows with Serve's target_capacity rather than to its replica counts) and complete
// clusterUpgradeOptions. maxSurgePercent defaults to 100.
func incrementalUpgradeOptions(rs *rayv1.RayService) error {
	if !rayspec.IncrementalUpgrade(&rs.Spec) {
		return nil
	}
	if !rayspec.Autoscaling(&rs.Spec.RayClusterSpec) {
		return field.Invalid(rayClusterConfigPath.Child("enableInTreeAutoscaling"),
			ptr.Deref(rs.Spec.RayClusterSpec.EnableInTreeAutoscaling, false),
			"must be true for upgradeStrategy.type "+string(rayv1.RayServiceNewClusterWithIncrementalUpgrade)+
				": the new cluster is scaled by the Ray autoscaler as its Serve target capacity grows")
	}
	opts := rayspec.UpgradeOptions(&rs.Spec)
	if opts == nil {
		return field.Required(upgradeOptionsPath,
			"required for upgradeStrategy.type "+string(rayv1.RayServiceNewClusterWithIncrementalUpgrade))
	}
	maxSurge := ptr.Deref(opts.MaxSurgePercent, 100)
	if maxSurge < 0 || maxSurge > 100 {
		return field.Invalid(upgradeOptionsPath.Child("maxSurgePercent"), maxSurge, "must be between 0 and 100")
	}
	stepPath := upgradeOptionsPath.Child("stepSizePercent")
	if opts.StepSizePercent == nil {
		return field.Required(stepPath, "the share of traffic moved to the new cluster at each step")
	}
	step := *opts.StepSizePercent
	if step < 0 || step > 100 {
		return field.Invalid(stepPath, step, "must be between 0 and 100")
	}
	if step > maxSurge {
		return field.Invalid(stepPath, step, fmt.Sprintf(
			"must not be greater than maxSurgePercent (%d): traffic never moves past the capacity the new cluster has been given", maxSurge))
	}
	intervalPath := upgradeOptionsPath.Child("intervalSeconds")
	if opts.IntervalSeconds == nil {
		return field.Required(intervalPath, "the time between two traffic steps")
	}
	if *opts.IntervalSeconds <= 0 {
		return field.Invalid(intervalPath, *opts.IntervalSeconds, "must be greater than 0")
	}
	if opts.GatewayClassName == "" {
		return field.Required(upgradeOptionsPath.Child("gatewayClassName"),
			"the GatewayClass of the Gateway that splits traffic between the old and the new cluster")
	}
	return nil
}

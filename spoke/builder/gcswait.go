package builder

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// WaitGCSContainerName is the init container that holds a worker back until the head's GCS answers.
const WaitGCSContainerName = "wait-gcs-ready"

// waitGCSQuietSeconds is how long the wait loop hides health-check errors: a GCS usually needs a
// while to come up, and only a longer wait is worth showing the errors for.
const waitGCSQuietSeconds = 120

// waitGCSScript polls `ray health-check` every five seconds until the GCS at %[1]s answers.
const waitGCSScript = `
SECONDS=0
while true; do
  if (( SECONDS <= %[2]d )); then
    if ray health-check --address %[1]s > /dev/null 2>&1; then
      echo "GCS is ready."
      break
    fi
    echo "$SECONDS seconds elapsed: Waiting for GCS to be ready."
  else
    if ray health-check --address %[1]s; then
      echo "GCS is ready. Any error messages above can be safely ignored."
      break
    fi
    echo "$SECONDS seconds elapsed: Still waiting for GCS to be ready. For troubleshooting, refer to the FAQ at https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html."
  fi
  sleep 5
done
`

// waitGCSContainer builds the wait-gcs-ready init container from the worker's Ray container: the
// same image, security context, env and mounts (TLS settings may live there), but small fixed
// resources, since it only polls and must not claim the worker's GPUs.
func waitGCSContainer(ray *corev1.Container, fqdn, port string, opts Options) corev1.Container {
	src := ray.DeepCopy()
	return corev1.Container{
		Name:            WaitGCSContainerName,
		Image:           src.Image,
		ImagePullPolicy: src.ImagePullPolicy,
		Command:         opts.shellCommand(),
		Args:            []string{fmt.Sprintf(waitGCSScript, fqdn+":"+port, waitGCSQuietSeconds)},
		SecurityContext: src.SecurityContext,
		Env:             src.Env,
		VolumeMounts:    src.VolumeMounts,
		Resources:       fixedResources("200m", "256Mi"),
	}
}

// Package loadbalancer is the local fleet's stand-in for what sits in front of a member's Ray
// Serve in a real cloud: the load balancer a Service of type LoadBalancer gets, and the Serve
// proxy behind it. A Controller watches one member's LoadBalancer Services, gives each the
// member's serve IP as status.loadBalancer.ingress, and listens on that IP at each of the
// Service's ports, answering every HTTP request with 200 and a JSON Response naming the member
// and the revision of the RayService owning the Service — enough for a test to tell which
// cluster and which revision served a request that went through a Gateway.
// It is the local fleet's, for cmd/rayfleet and e2e/; hub/ and spoke/ production code never
// imports it, and it imports no hub/, spoke/ or cmd/ package, nor shared/testing.
package loadbalancer

import (
	"context"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// rayServices is the resource whose owner reference on a Service names the RayService a
// request's revision is read from.
var rayServices = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayservices"}

// syncTimeout bounds the wait for the first list of Services and RayServices.
const syncTimeout = time.Minute

// readHeaderTimeout bounds how long a client may take to send its request headers.
const readHeaderTimeout = 10 * time.Second

// Options configure a Controller.
type Options struct {
	// Cluster is the member's name, reported in every Response.
	Cluster string
	// IP is the address every LoadBalancer Service of the member gets as its ingress and
	// that the listeners bind; 127.0.0.1 works anywhere, other addresses only where they
	// are assigned to an interface (see the package's tests and the e2e's network namespace).
	IP string
	// Config reaches the member's API server; it needs to read Services and RayServices and
	// to update Services' status.
	Config *rest.Config
	// Log receives one line per event worth knowing (a port refused, an address that cannot
	// be bound); nil discards them.
	Log io.Writer
	// Backend, when set, makes the stand-in a load balancer only: each request on a port is
	// forwarded over a connection Backend opens for the Service holding the port (e.g. to its
	// ClusterIP inside a real Node's network namespace), so that the Serve proxy answering is
	// Ray's own. Unset, the stand-in answers every request itself with a Response.
	Backend func(ctx context.Context, svc *corev1.Service, port int32) (net.Conn, error)
	// Listen opens the listeners on IP (e.g. inside a network namespace where IP is
	// assigned); default net.Listen on TCP.
	Listen func(address string) (net.Listener, error)
}

// Response is the body of every answer: who served the request.
type Response struct {
	// Cluster is the member's name.
	Cluster string `json:"cluster"`
	// Revision is the fleet.rayfleet.io/revision annotation of the RayService owning the
	// Service, "" when it has none or no RayService owns the Service.
	Revision string `json:"revision"`
	// RayService is the owning RayService as namespace/name, "" when there is none.
	RayService string `json:"rayService"`
}

// Controller is a running stand-in for one member.
type Controller struct {
	opts     Options
	log      *log.Logger
	kube     kubernetes.Interface
	services corelisters.ServiceLister
	rayMeta  cache.GenericLister
	queue    workqueue.TypedRateLimitingInterface[string]
	// ctx ends with Stop, cutting short a status write in flight.
	ctx      context.Context
	cancel   context.CancelFunc
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	mu sync.Mutex
	// ports are the ports claimed, by port number.
	ports map[int32]*claim
	// refused are the Services turned away because a port was taken; each is queued again
	// when a port is released.
	refused map[string]bool
	// unbindableLogged is set once the address was found unbindable and said so.
	unbindableLogged bool

	// failing is the injected fault SetFailing turns on: every request answered 503.
	failing atomic.Bool
}

// claim is a port one Service holds; server is nil when the address cannot be bound.
type claim struct {
	service string
	server  *http.Server
}

// Start starts the controller: it waits until its caches have synced (ctx bounds that wait),
// then reconciles in the background until Stop.
func Start(ctx context.Context, opts Options) (*Controller, error) {
	kube, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("load balancer of %s: building a client: %w", opts.Cluster, err)
	}
	meta, err := metadata.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("load balancer of %s: building a metadata client: %w", opts.Cluster, err)
	}
	return start(ctx, opts, kube, meta)
}

// start is Start with the clients given, so that unit tests can pass fakes.
func start(ctx context.Context, opts Options, kube kubernetes.Interface, meta metadata.Interface) (*Controller, error) {
	if net.ParseIP(opts.IP) == nil {
		return nil, fmt.Errorf("load balancer of %s: %q is not an IP address", opts.Cluster, opts.IP)
	}
	logOut := opts.Log
	if logOut == nil {
		logOut = io.Discard
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c := &Controller{
		ctx:     runCtx,
		cancel:  cancel,
		opts:    opts,
		log:     log.New(logOut, "loadbalancer "+opts.Cluster+": ", log.LstdFlags|log.Lmicroseconds),
		kube:    kube,
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		ports:   map[int32]*claim{},
		refused: map[string]bool{},
	}
	kubeInformers := informers.NewSharedInformerFactory(kube, 0)
	svcInformer := kubeInformers.Core().V1().Services()
	if _, err := svcInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("load balancer of %s: watching Services: %w", opts.Cluster, err)
	}
	c.services = svcInformer.Lister()
	rayInformer := metadatainformer.NewSharedInformerFactory(meta, 0).ForResource(rayServices)
	c.rayMeta = rayInformer.Lister()

	go rayInformer.Informer().Run(c.stop)
	kubeInformers.Start(c.stop)
	syncCtx, syncCancel := context.WithTimeout(ctx, syncTimeout)
	defer syncCancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), svcInformer.Informer().HasSynced, rayInformer.Informer().HasSynced) {
		c.cancel()
		close(c.stop)
		c.queue.ShutDown()
		return nil, fmt.Errorf("load balancer of %s: Services and RayServices not listed within %s", opts.Cluster, syncTimeout)
	}
	go c.run()
	return c, nil
}

// Stop stops reconciling and closes every listener. It is safe to call more than once.
func (c *Controller) Stop() {
	c.stopOnce.Do(func() {
		c.cancel()
		close(c.stop)
		c.queue.ShutDown()
		<-c.done
		c.mu.Lock()
		claims := slices.Collect(maps.Values(c.ports))
		c.ports = map[int32]*claim{}
		c.mu.Unlock()
		for _, cl := range claims {
			cl.close()
		}
	})
}

// enqueue queues a Service's key.
func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// run works the queue until it shuts down.
func (c *Controller) run() {
	defer close(c.done)
	for {
		key, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		if err := c.reconcile(key); err != nil {
			c.log.Printf("Service %s: %v (retrying)", key, err)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

// reconcile brings one Service's listeners and ingress status in line with its spec.
func (c *Controller) reconcile(key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil //nolint:nilerr // a malformed key never becomes valid; drop it
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.release(key)
		c.forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the cache: %w", err)
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.DeletionTimestamp != nil {
		c.release(key)
		c.forget(key)
		return c.setIngress(svc, false)
	}
	ports := tcpPorts(svc)
	if taken := c.takenBy(key, ports); taken != "" {
		c.release(key)
		c.refuse(key, taken)
		return c.setIngress(svc, false)
	}
	if err := c.claim(key, ports); err != nil {
		return err
	}
	return c.setIngress(svc, true)
}

// tcpPorts are the Service's TCP ports: a load balancer for HTTP has nothing to do with the
// others.
func tcpPorts(svc *corev1.Service) []int32 {
	var ports []int32
	for _, p := range svc.Spec.Ports {
		if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
			ports = append(ports, p.Port)
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}

// setIngress writes status.loadBalancer.ingress: the controller's IP when serving, nothing
// otherwise (leaving an ingress another controller wrote alone).
func (c *Controller) setIngress(svc *corev1.Service, serving bool) error {
	current := svc.Status.LoadBalancer.Ingress
	hasOurs := slices.ContainsFunc(current, func(i corev1.LoadBalancerIngress) bool { return i.IP == c.opts.IP })
	onlyOurs := hasOurs && len(current) == 1 && current[0].Hostname == ""
	if (serving && onlyOurs) || (!serving && !hasOurs) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Status.LoadBalancer = corev1.LoadBalancerStatus{}
	if serving {
		updated.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: c.opts.IP}}
	}
	ctx, cancel := context.WithTimeout(c.ctx, syncTimeout)
	defer cancel()
	if _, err := c.kube.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the status of Service %s/%s on %s: %w", svc.Namespace, svc.Name, c.opts.Cluster, err)
	}
	return nil
}

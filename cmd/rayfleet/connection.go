package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/devfleet"
	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/membership"
	rfscheme "github.com/rayfleet/rayfleet/shared/scheme"
)

// hubFlags select the hub: kubectl's connection flags, persistent on the root command so that
// they go anywhere on the command line as kubectl's do, and --hub-kubeconfig and --hub-context
// of the commands that reach the hub, which name the same as --kubeconfig and --context.
type hubFlags struct {
	config *genericclioptions.ConfigFlags
	alias  clusterFlags
}

// newHubFlags returns the hub's flags, not yet registered.
func newHubFlags() *hubFlags {
	config := genericclioptions.NewConfigFlags(true)
	// No discovery is done, so there is nothing to cache.
	config.CacheDir = nil
	return &hubFlags{config: config}
}

// registerConnection adds kubectl's connection flags to fs, marked for the usage and for
// checkConnectionFlags.
func (h *hubFlags) registerConnection(fs *pflag.FlagSet) {
	connection := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	h.config.AddFlags(connection)
	connection.VisitAll(func(f *pflag.Flag) {
		f.Annotations = map[string][]string{connectionFlag: nil}
		fs.AddFlag(f)
	})
}

// registerAliases adds --hub-kubeconfig and --hub-context to cmd and marks it as one that
// reaches the hub; withNamespace says it takes -n too.
func (h *hubFlags) registerAliases(cmd *cobra.Command, withNamespace bool) {
	takesHub(cmd, withNamespace)
	fs := cmd.Flags()
	fs.StringVar(&h.alias.kubeconfig, "hub-kubeconfig", "", "kubeconfig file of the hub: the same as --kubeconfig")
	fs.StringVar(&h.alias.context, "hub-context", "", "kubeconfig context of the hub: the same as --context")
}

// completeNamespaces has the shell complete -n with the hub's namespaces, as kubectl does. cmd
// holds -n (the root command): a flag has one completion, whichever command it is given to.
func (h *hubFlags) completeNamespaces(cmd *cobra.Command) {
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		fail := cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
		hub, err := h.connect(h.merged())
		if err != nil {
			return nil, fail
		}
		var namespaces corev1.NamespaceList
		if err := hub.Client.List(cmd.Context(), &namespaces); err != nil {
			return nil, fail
		}
		var out []cobra.Completion
		for _, ns := range namespaces.Items {
			if strings.HasPrefix(ns.Name, toComplete) {
				out = append(out, ns.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
}

// complete merges the aliases into what selects the hub; naming two different kubeconfigs or
// contexts is a usage error.
func (h *hubFlags) complete(cmd *cobra.Command) (clusterFlags, error) {
	switch {
	case h.alias.kubeconfig != "" && *h.config.KubeConfig != "" && h.alias.kubeconfig != *h.config.KubeConfig:
		return clusterFlags{}, usageError(cmd, "--hub-kubeconfig and --kubeconfig name the same thing: give one")
	case h.alias.context != "" && *h.config.Context != "" && h.alias.context != *h.config.Context:
		return clusterFlags{}, usageError(cmd, "--hub-context and --context name the same thing: give one")
	}
	return h.merged(), nil
}

// merged is what selects the hub: each alias, else the connection flag it stands for.
func (h *hubFlags) merged() clusterFlags {
	c := h.alias
	if c.kubeconfig == "" {
		c.kubeconfig = *h.config.KubeConfig
	}
	if c.context == "" {
		c.context = *h.config.Context
	}
	return c
}

// namespace is -n's value, "" when not given.
func (h *hubFlags) namespace() string { return *h.config.Namespace }

// connect builds a client for the hub c (complete's answer) selects, with the rest of the
// connection flags.
func (h *hubFlags) connect(c clusterFlags) (*connected, error) {
	h.config.KubeConfig, h.config.Context = &c.kubeconfig, &c.context
	return connectConfig(h.config, "hub")
}

// connected is one cluster selected by clusterFlags.
type connected struct {
	membership.Cluster
	// namespace is the context's namespace, "default" when it sets none.
	namespace string
}

// connect builds a client for the cluster c selects, with kubectl's loading rules.
func connect(c clusterFlags, role string) (*connected, error) {
	config := genericclioptions.NewConfigFlags(false)
	config.KubeConfig, config.Context = &c.kubeconfig, &c.context
	return connectConfig(config, role)
}

// connectConfig builds a client for the cluster kubectl's connection flags select; role names
// the cluster in errors.
func connectConfig(config *genericclioptions.ConfigFlags, role string) (*connected, error) {
	cfg, err := config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the %s's kubeconfig: %w", role, err)
	}
	if selectsNothing(config, cfg) {
		return nil, noKubeconfigError(role)
	}
	namespace, _, err := config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the %s context's namespace: %w", role, err)
	}
	scheme, err := rfscheme.New()
	if err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the %s at %s: %w", role, cfg.Host, err)
	}
	return &connected{Cluster: membership.Cluster{Client: cl, Config: cfg}, namespace: namespace}, nil
}

// selectsNothing reports whether no kubeconfig, context or server was found, so that client-go
// fell back to localhost:8080: its "connection refused" would not say why.
func selectsNothing(config *genericclioptions.ConfigFlags, cfg *rest.Config) bool {
	if config.APIServer != nil && *config.APIServer != "" {
		return false
	}
	raw, err := config.ToRawKubeConfigLoader().RawConfig()
	return err == nil && len(raw.Clusters) == 0 && cfg.Host == clientcmd.ClusterDefaults.Server
}

// noKubeconfigError says how to select the cluster, naming the local dev fleet's hub
// kubeconfig when one is there: after `make demo` that is what a newcomer wants.
func noKubeconfigError(role string) error {
	msg := fmt.Sprintf("no kubeconfig selects the %s: give --kubeconfig FILE or set KUBECONFIG", role)
	if role != "hub" {
		return errors.New(msg)
	}
	if dir, err := devfleet.DefaultStateDir(); err == nil {
		path := filepath.Join(dir, "kubeconfigs", devfleet.HubName+".kubeconfig")
		if _, err := os.Stat(path); err == nil {
			msg += "; the local dev fleet's hub is --kubeconfig " + path
		}
	}
	return errors.New(msg)
}

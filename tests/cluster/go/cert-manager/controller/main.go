// Command controller runs cert-manager's certificate controllers (from the
// cert-manager module's pkg/controller packages) against one apiserver, for
// batchgate's end-to-end tests. cert-manager's own command packages are
// separate Go modules that the module proxy does not serve, so this small
// main wires the library the way a single, non-leader-elected replica needs:
// Certificates, CertificateRequests, Issuers/ClusterIssuers with the
// SelfSigned and CA issuer types. ACME, Vault, Venafi and the ingress/gateway
// shims are not linked in.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Each package registers its controller with controller.Register.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	// Issuer types, registered with issuer.RegisterIssuer.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the apiserver to work against")
	clusterNS := flag.String("cluster-resource-namespace", "cert-manager", "namespace of ClusterIssuers' Secrets")
	workers := flag.Int("workers", 5, "workers per controller")
	klog.InitFlags(nil)
	flag.Parse()
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "controller: --kubeconfig is required")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := klog.Background().WithName("cert-manager-controller")
	ctx = logf.NewContext(ctx, log)

	opts := controller.ContextOptions{
		Kubeconfig:         *kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: *clusterNS},
		CertificateOptions: controller.CertificateOptions{
			// cert-manager's defaults (--certificate-request-minimum/maximum-backoff-duration).
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	}
	factory, err := controller.NewContextFactory(ctx, opts)
	if err != nil {
		fail(err)
	}
	base, err := factory.Build()
	if err != nil {
		fail(err)
	}

	names := make([]string, 0, len(controller.Known()))
	for name := range controller.Known() {
		names = append(names, name)
	}
	sort.Strings(names)
	runs := make([]controller.Interface, 0, len(names))
	for _, name := range names {
		c, err := controller.Known()[name](factory)
		if err != nil {
			fail(fmt.Errorf("constructing %s: %w", name, err))
		}
		runs = append(runs, c)
	}
	log.Info("starting controllers", "controllers", names)

	// Informers are registered by the constructors above; start them only now.
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.SharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())

	var wg sync.WaitGroup
	for i, c := range runs {
		wg.Add(1)
		go func(name string, c controller.Interface) {
			defer wg.Done()
			if err := c.Run(*workers, ctx); err != nil {
				log.Error(err, "controller stopped", "controller", name)
				stop()
			}
		}(names[i], c)
	}
	wg.Wait()
	log.Info("stopped")
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "controller: %v\n", err)
	os.Exit(1)
}

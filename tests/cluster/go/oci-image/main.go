// Command oci-image assembles batchgate's container image offline, as an OCI
// image layout (https://github.com/opencontainers/image-spec/blob/main/image-layout.md),
// with go-containerregistry: one layer holding the static binary at
// /batchgate on an empty base, a non-root user, no shell, the entrypoint and
// command of the Dockerfile. The layer and config carry fixed timestamps, so
// the same binary gives the same digests. Built and run by
// tests/cluster/build-image.sh.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	binary := flag.String("binary", "", "the static batchgate binary")
	out := flag.String("out", "", "directory for the OCI image layout (replaced)")
	ref := flag.String("ref", "batchgate:latest", "org.opencontainers.image.ref.name of the image in the layout")
	version := flag.String("version", "", "org.opencontainers.image.version label")
	user := flag.String("user", "65532:65532", "user:group the container runs as")
	epoch := flag.Int64("epoch", 0, "timestamp (Unix seconds) of the layer's file and the config")
	flag.Parse()
	if *binary == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "oci-image: --binary and --out are required")
		os.Exit(2)
	}
	if err := run(*binary, *out, *ref, *version, *user, time.Unix(*epoch, 0).UTC()); err != nil {
		fmt.Fprintf(os.Stderr, "oci-image: %v\n", err)
		os.Exit(1)
	}
}

func run(binary, out, ref, version, user string, created time.Time) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     "batchgate",
		Mode:     0o555,
		Size:     int64(len(bin)),
		ModTime:  created,
		Format:   tar.FormatPAX,
	}); err != nil {
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layerTar := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "COPY batchgate /batchgate (tests/cluster/build-image.sh)",
		},
	})
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture = "amd64"
	cf.OS = "linux"
	cf.Created = v1.Time{Time: created}
	cf.Config.User = user
	cf.Config.Entrypoint = []string{"/batchgate"}
	cf.Config.Cmd = []string{"serve", "--config", "/etc/batchgate/config.yaml"}
	cf.Config.ExposedPorts = map[string]struct{}{"9443/tcp": {}, "8081/tcp": {}, "8082/tcp": {}}
	cf.Config.Env = nil
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title": "batchgate",
	}
	if version != "" {
		cf.Config.Labels["org.opencontainers.image.version"] = version
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}

	if err := os.RemoveAll(out); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref,
	})); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	size, err := layer.Size()
	if err != nil {
		return err
	}
	fmt.Printf("%s %d\n", digest, size)
	return nil
}

// Package deploy holds the tests of queen-go's packaging: the Dockerfile and
// docker-compose.yaml at the repository root, the Kubernetes manifests under
// deploy/kubernetes and the AWS SAM template under deploy/lambda. They are checked against
// the broker itself, through config.Variables and config.Parse, so that a manifest cannot
// drift from the code it deploys: an environment variable the broker does not read (a
// typo), a secret in a ConfigMap, a probe on /health, a port, grace period or spool path
// that disagrees with the configuration, a drain job that cannot reach a broker's spool.
//
// It is a module of its own (deploy/go.mod, with the main module replaced by ../) so that
// the Kubernetes API types it decodes into stay out of the broker's dependencies; run its
// tests with `cd deploy && go test ./...`. It also holds queen-probe, the container
// image's health-check binary (the image has no shell or curl).
package deploy

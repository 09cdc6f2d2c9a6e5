//go:build !linux

package torture

// SandboxUnavailable says why this machine cannot give a job a sandbox:
// network and mount namespaces are Linux's.
func SandboxUnavailable() string {
	return "needs Linux (network and mount namespaces)"
}

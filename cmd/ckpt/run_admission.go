package main

import (
	"fmt"

	"github.com/ckpt/ckpt/internal/launch"
	"github.com/ckpt/ckpt/internal/resource"
)

// probeResources reads what this machine has, for launch.Options' admission
// of a job; tests replace it.
var probeResources = resource.Probe

// joinTimeoutUsage is the help of --join-timeout.
var joinTimeoutUsage = fmt.Sprintf("how long the ranks of a launch may take to join (default %v plus %v per rank per CPU)",
	launch.JoinAllowance(0, 1), launch.JoinAllowance(1, 1)-launch.JoinAllowance(0, 1))

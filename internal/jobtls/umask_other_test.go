//go:build !unix

package jobtls

func umask0() func() { return func() {} }

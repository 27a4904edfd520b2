package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// profiles are the tool's own CPU and allocation profiles of one run (-cpuprofile,
// -memprofile): on a small machine the load generator competes with the broker for the
// cores, so what it spends per message is part of any figure it reports (docs/benchmarks.md).
type profiles struct {
	cpuFile, memFile string
	cpu              *os.File
}

// start begins the CPU profile, if one was asked for.
func (p *profiles) start() error {
	if p.cpuFile == "" {
		return nil
	}
	f, err := os.Create(p.cpuFile)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("cpu profile %s: %w", p.cpuFile, err)
	}
	p.cpu = f
	return nil
}

// stop ends the CPU profile and writes the allocation profile (every allocation since
// the start of the process, sampled by the runtime).
func (p *profiles) stop() error {
	var errs []error
	if p.cpu != nil {
		pprof.StopCPUProfile()
		if err := p.cpu.Close(); err != nil {
			errs = append(errs, fmt.Errorf("cpu profile %s: %w", p.cpuFile, err))
		}
		p.cpu = nil
	}
	if p.memFile != "" {
		errs = append(errs, writeAllocs(p.memFile))
	}
	return errors.Join(errs...)
}

func writeAllocs(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("alloc profile: %w", err)
	}
	runtime.GC() // the profile's in-use figures are as of the last collection
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("alloc profile %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("alloc profile %s: %w", name, err)
	}
	return nil
}

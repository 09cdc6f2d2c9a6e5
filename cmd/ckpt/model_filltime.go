package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ckpt/ckpt/internal/units"
	"github.com/ckpt/ckpt/model"
)

func newFillTimeCmd() *cobra.Command {
	c := leaf("fill-time (--system NAME | --ram B --disk-storage B --disk-size B --disk-bw R)", "Ideal full-memory checkpoint time by the Checkpoint-Fill-Time Law (Cao et al. 2016, §III-D)", fillTimeLong, fillTimeExample)
	fs := c.Flags()
	f := &fillTimeFlags{}
	f.system = fs.String("system", "", "a system of Cao et al. 2016, Table I (see above)")
	f.ram = sizeFlag(fs, "ram", "memory to dump, Storage_RAM")
	f.diskStorage = sizeFlag(fs, "disk-storage", "total capacity of the storage system, Storage_disks")
	f.diskSize = sizeFlag(fs, "disk-size", "capacity of one disk")
	f.diskBW = bandwidthFlag(fs, "disk-bw", "write bandwidth of one disk")
	f.asJSON = jsonFlag(c)
	return runs(c, f)
}

// fillTimeFlags are the flags of the command newFillTimeCmd builds.
type fillTimeFlags struct {
	system                             *string
	ram, diskStorage, diskSize, diskBW *quantity
	asJSON                             *bool
}

func (f *fillTimeFlags) run(c *cobra.Command) error {
	explicit := []req{{"ram", f.ram}, {"disk-storage", f.diskStorage}, {"disk-size", f.diskSize}, {"disk-bw", f.diskBW}}
	var in model.FillTimeInput
	var preset *model.FillTimeSystem
	if *f.system != "" {
		for _, e := range explicit {
			if e.q.set {
				return usagef("--%s: give --system or the explicit parameters, not both", e.name)
			}
		}
		sys, err := model.LookupFillTimeSystem(*f.system)
		if err != nil {
			return usagef("--system: %v", err)
		}
		preset, in = &sys, sys.FillTimeInput
	} else {
		if err := require(explicit...); err != nil {
			return usagef("%v (or give --system)", err)
		}
		in = model.FillTimeInput{RAM: f.ram.v, DiskStorage: f.diskStorage.v, DiskSize: f.diskSize.v, DiskBW: f.diskBW.v}
	}
	secs, err := model.FillTime(in)
	if err != nil {
		return modelErr(err)
	}
	w := c.OutOrStdout()
	if *f.asJSON {
		o := object{{"seconds", num(secs)}, {"ratio", num(in.RAM / in.DiskStorage)}, {"single_disk_fill_seconds", num(in.SingleDiskFillTime())}}
		if preset != nil {
			o = append(o, kv{"paper_seconds", num(preset.PrintedMinutes * 60)})
			if preset.Note != "" {
				o = append(o, kv{"note", preset.Note})
			}
		}
		return writeJSON(w, o)
	}
	t := newTable(w)
	if preset != nil {
		t.row("system", preset.Title)
	}
	t.row("RAM / storage", fmt.Sprintf("%s / %s = %.4g", units.FormatSize(in.RAM), units.FormatSize(in.DiskStorage), in.RAM/in.DiskStorage))
	t.row("single-disk fill time", fmt.Sprintf("%s / %s = %s", units.FormatSize(in.DiskSize), units.FormatBandwidth(in.DiskBW), units.FormatDuration(in.SingleDiskFillTime())))
	t.row("ideal checkpoint time", fmt.Sprintf("%s (%s)", units.FormatDuration(secs), sec(secs)))
	if preset != nil {
		t.row("paper prints", fmt.Sprintf("%.3g min", preset.PrintedMinutes))
		if preset.Note != "" {
			t.row("note", preset.Note)
		}
	}
	return t.flush()
}

const fillTimeLong = `The Checkpoint-Fill-Time Law of Cao et al. 2016, §III-D:

  CkptTime = Storage_RAM / Storage_disks × SingleDiskFillTime

the ideal time to dump all memory when every disk of the storage system writes
at its own bandwidth (single-disk fill time = disk size / disk bandwidth). The
paper finds real checkpoints about ten times slower.

Presets (Cao et al. 2016, Table I, decimal units): stampede, jaguar, titan,
sunway-taihulight, ccr, ssd-node, exascale. Unknown entries of the table are
filled from the ratio the paper assumes; where our value differs from the
printed one the output says why.`

const fillTimeExample = `  ckpt model fill-time --system titan
  ckpt model fill-time --ram 205TB --disk-storage 10PB --disk-size 2TB --disk-bw 100MB/s --json`

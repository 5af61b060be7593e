package bundle

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
)

// The per-minute files of a bundle (access/minute-counts.csv,
// access/minute-status.csv) are CSV with a header row.

// WriteCSV writes header, then the rows rows hands to write.
func WriteCSV(w io.Writer, header []string, rows func(write func(record []string) error) error) error {
	bw := bufio.NewWriter(w)
	cw := csv.NewWriter(bw)
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := rows(cw.Write); err != nil {
		return err
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return bw.Flush()
}

// ReadCSV reads path, checks its header and hands row every record after it
// with its line number. Every error names the file, and the line when it has one.
func ReadCSV(path string, header []string, row func(line int, record []string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	r.FieldsPerRecord = len(header)
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if line == 1 {
			if rec[0] != header[0] {
				return fmt.Errorf("%s:1: want the header %v", path, header)
			}
			continue
		}
		if err := row(line, rec); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
}

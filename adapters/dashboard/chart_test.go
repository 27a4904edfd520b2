package dashboard

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestChart(t *testing.T) {
	t.Parallel()
	minutes := func(n int) []time.Time {
		out := make([]time.Time, n)
		for i := range out {
			out[i] = t0.Add(time.Duration(i) * time.Minute)
		}
		return out
	}
	ramp := func(n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = float64(i)
		}
		return out
	}
	cases := []struct {
		name    string
		c       Chart
		want    []string
		notWant []string
		rows    int // data table rows
	}{
		{"a week of minutes is bounded", Chart{Name: "throughput", Title: "Throughput", Unit: "messages/min", Times: minutes(10080),
			Series: []Series{{"Pushed", ramp(10080)}}, Total: "42", Area: true},
			[]string{`data-chart="throughput" data-total="42"`, `<title id="chart-throughput-title">Throughput (messages/min)</title>`,
				`class="area s0"`, `role="img"`}, nil, 360},
		{"names are escaped", Chart{Name: "x", Title: `<script>`, Times: minutes(2), Series: []Series{{`"a"&b`, []float64{1, 2}}}},
			[]string{"&lt;script&gt;", "&#34;a&#34;&amp;b"}, []string{"<script>"}, 2},
		{"a gap splits the line, a lone point is a dot", Chart{Name: "g", Times: minutes(4),
			Series: []Series{{"s", []float64{1, math.NaN(), 3, 4}}}},
			[]string{"<circle", "M", "–"}, nil, 4},
		{"no data", Chart{Name: "e", Title: "Empty", Series: []Series{{"s", nil}}},
			[]string{"No data in this range."}, []string{"<path"}, 1},
		{"second series dashed", Chart{Name: "d", Times: minutes(2), Series: []Series{{"a", []float64{1, 2}}, {"b", []float64{2, 1}}}},
			[]string{`class="line s1"`, `stroke-dasharray="6 3"`}, nil, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := string(c.c.HTML())
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %s", w)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(out, w) {
					t.Errorf("has %s", w)
				}
			}
			body := out[strings.Index(out, "<tbody>"):]
			if n := strings.Count(body, "<tr>"); n != c.rows {
				t.Errorf("%d table rows, want %d", n, c.rows)
			}
		})
	}
}

func TestFormats(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		got, want string
	}{
		{compact(1234567), "1.23M"}, {compact(12345), "12.3k"}, {compact(0.5), "0.5"}, {compact(7), "7"},
		{compact(3.2e9), "3.2G"}, {number(int64(1234567)), "1,234,567"}, {number(-1234), "-1,234"}, {number(12), "12"},
		{byteSize(512), "512 B"}, {byteSize(1536), "1.5 KiB"}, {duration(1500 * time.Millisecond), "1 s"},
		{duration(90 * time.Second), "1 min 30 s"}, {duration(26 * time.Hour), "1 d 2 h"}, {duration(0), "0"},
		{trimFloat(niceCeil(37), 2), "50"}, {trimFloat(niceCeil(0), 2), "1"}, {trimFloat(niceCeil(2.1), 2), "2.5"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

package httpapi

import (
	"bytes"
	"testing"
)

var pushSamples = []string{
	`{"items":[{"queue":"orders","partition":"cust-42","payload":{"orderId":91},"transactionId":"order-91"}]}`,
	`{"items":[]}`,
	` { "items" : [ { "queue" : "q" , "payload" : [1, 2 ,3] } , {"queue":"q","payload":null,"partition":null,"transactionId":null} ] , "x" : {"items":1} } `,
	`{"items":[{"queue":"q","payload":"a \" string","traceId":"t","producerSub":"s"}]}`,
	`{"items":[{"queue":"q","payload":1e10 }]}`,
	`{"items":[{"queue":"q","payload":true},{"queue":"r","payload":{"nested":[{"deep":{}}]}}]}`,
	`{"items":[{"queue":"q\u0041","payload":1}]}`,
	`{"items":[{"Queue":"q","payload":1}]}`,
	`{"items":[{"queue":"q","QUEUE":"r","payload":1}]}`,
	`{"items":[{"queue":"q","partition":"","payload":1}]}`,
	`{"items":[{"queue":"q","transactionId":"","payload":1}]}`,
	`{"items":[{"queue":"q","payload":1,"payload":2}]}`,
	`{"Items":[{"queue":"q","payload":1}]}`,
	`{"items":null}`,
	`[1]`,
	`{"items":[{"queue":7,"payload":1}]}`,
	"{\"items\":[{\"queue\":\"bad-\xff\",\"payload\":1}]}",
	`{"items":[{"queue":"q","payload":{a}}]}`,
	`{"items":[{"queue":"q","partition":"p","transactionId":"t1","payload":1}],"items":[{"queue":"q","payload":2}]}`,
}

// FuzzFastPushMatchesReflective: whatever the fast path accepts, the reflective parser
// accepts too, with the same items byte for byte.
func FuzzFastPushMatchesReflective(f *testing.F) {
	for _, s := range pushSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ok := fastPush(body)
		if !ok {
			return
		}
		slow, err := parseItems(body)
		if err != nil {
			t.Fatalf("fast path accepted %q, reflective parser says %v", body, err)
		}
		if len(fast) != len(slow) {
			t.Fatalf("%q: %d items vs %d", body, len(fast), len(slow))
		}
		for i := range fast {
			a, b := fast[i], slow[i]
			if a.Queue != b.Queue || a.Partition != b.Partition || a.TransactionID != b.TransactionID || !bytes.Equal(a.Payload, b.Payload) {
				t.Fatalf("%q item %d: fast %+v vs reflective %+v", body, i, a, b)
			}
		}
	})
}

func TestFastPushTakesTheCommonShape(t *testing.T) {
	t.Parallel()
	body := []byte(pushSamples[0])
	items, ok := fastPush(body)
	if !ok || len(items) != 1 {
		t.Fatalf("fast path refused the common shape (%v, %d items)", ok, len(items))
	}
	// Zero copy: the payload is a window on the request body.
	if &items[0].Payload[0] != &body[bytes.Index(body, []byte(`{"orderId"`))] {
		t.Fatal("payload was copied out of the request body")
	}
}

package postgres

import "github.com/jackc/pgx/v5/pgtype"

// arrayParam is a one-dimensional array parameter whose elements pgx reads through
// pointers. pgtype.FlatArray hands pgx each element as an interface value, which costs
// an allocation per string, byte slice or large integer: four or five per segment of a
// push bundle. Here each element is a pointer converted to a small valuer type (no
// allocation), and pgx's codecs take those valuers as they take the plain values.
type arrayParam[T any] struct {
	elems []T
	elem  func(*T) any // the element at a pointer as one of the valuers below
}

// Dimensions implements pgtype.ArrayGetter; nil elems encode NULL.
func (a arrayParam[T]) Dimensions() []pgtype.ArrayDimension {
	if a.elems == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a.elems)), LowerBound: 1}}
}

// Index implements pgtype.ArrayGetter.
func (a arrayParam[T]) Index(i int) any { return a.elem(&a.elems[i]) }

// IndexType implements pgtype.ArrayGetter.
func (a arrayParam[T]) IndexType() any { return a.elem(new(T)) }

func textArray(s []string) arrayParam[string] {
	return arrayParam[string]{elems: s, elem: func(p *string) any { return (*textElem)(p) }}
}

func byteaArray(b [][]byte) arrayParam[[]byte] {
	return arrayParam[[]byte]{elems: b, elem: func(p *[]byte) any { return (*byteaElem)(p) }}
}

func int4Array(n []int32) arrayParam[int32] {
	return arrayParam[int32]{elems: n, elem: func(p *int32) any { return (*int4Elem)(p) }}
}

func int8Array(n []int64) arrayParam[int64] {
	return arrayParam[int64]{elems: n, elem: func(p *int64) any { return (*int8Elem)(p) }}
}

type (
	textElem  string
	byteaElem []byte
	int4Elem  int32
	int8Elem  int64
)

func (t *textElem) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*t), Valid: true}, nil
}
func (b *byteaElem) BytesValue() ([]byte, error) { return *b, nil }
func (n *int4Elem) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*n), Valid: true}, nil
}
func (n *int8Elem) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*n), Valid: true}, nil
}

package schema

// DiffKind names one kind of change between two schemas. The names follow
// Confluent's JSON Schema compatibility checker where it has one; changes it
// does not model (format, content encoding, conditionals, ...) use the same
// NOUN_VERB scheme.
type DiffKind string

// Kinds of difference reported by Diff. Whether a kind is compatible can
// depend on the values involved and on the Policy, so the verdict is carried
// by Difference.Compatible rather than by the kind. Under Strict the verdict
// of every kind Confluent also names is Confluent's (its STRICT set), except
// where the package documentation ("Where Strict departs from Confluent")
// says otherwise.
const (
	// Annotations; always compatible.
	IDChanged          DiffKind = "ID_CHANGED"
	TitleChanged       DiffKind = "TITLE_CHANGED"
	DescriptionChanged DiffKind = "DESCRIPTION_CHANGED"
	DefaultChanged     DiffKind = "DEFAULT_CHANGED"

	// Types and values.
	TypeExtended      DiffKind = "TYPE_EXTENDED"
	TypeNarrowed      DiffKind = "TYPE_NARROWED"
	TypeChanged       DiffKind = "TYPE_CHANGED"
	EnumArrayExtended DiffKind = "ENUM_ARRAY_EXTENDED"
	EnumArrayNarrowed DiffKind = "ENUM_ARRAY_NARROWED"
	EnumArrayChanged  DiffKind = "ENUM_ARRAY_CHANGED"
	ReferenceChanged  DiffKind = "REFERENCE_CHANGED"

	// A subschema present on one side only, such as the "items" schema of
	// a list: added is a break (old data was not checked against it) unless
	// it accepts everything, removed is compatible.
	SchemaAdded   DiffKind = "SCHEMA_ADDED"
	SchemaRemoved DiffKind = "SCHEMA_REMOVED"

	// Strings.
	MaxLengthAdded          DiffKind = "MAX_LENGTH_ADDED"
	MaxLengthRemoved        DiffKind = "MAX_LENGTH_REMOVED"
	MaxLengthIncreased      DiffKind = "MAX_LENGTH_INCREASED"
	MaxLengthDecreased      DiffKind = "MAX_LENGTH_DECREASED"
	MinLengthAdded          DiffKind = "MIN_LENGTH_ADDED"
	MinLengthRemoved        DiffKind = "MIN_LENGTH_REMOVED"
	MinLengthIncreased      DiffKind = "MIN_LENGTH_INCREASED"
	MinLengthDecreased      DiffKind = "MIN_LENGTH_DECREASED"
	PatternAdded            DiffKind = "PATTERN_ADDED"
	PatternRemoved          DiffKind = "PATTERN_REMOVED"
	PatternChanged          DiffKind = "PATTERN_CHANGED"
	FormatAdded             DiffKind = "FORMAT_ADDED"
	FormatRemoved           DiffKind = "FORMAT_REMOVED"
	FormatChanged           DiffKind = "FORMAT_CHANGED"
	ContentEncodingAdded    DiffKind = "CONTENT_ENCODING_ADDED"
	ContentEncodingRemoved  DiffKind = "CONTENT_ENCODING_REMOVED"
	ContentEncodingChanged  DiffKind = "CONTENT_ENCODING_CHANGED"
	ContentMediaTypeAdded   DiffKind = "CONTENT_MEDIA_TYPE_ADDED"
	ContentMediaTypeRemoved DiffKind = "CONTENT_MEDIA_TYPE_REMOVED"
	ContentMediaTypeChanged DiffKind = "CONTENT_MEDIA_TYPE_CHANGED"

	// Numbers.
	MaximumAdded              DiffKind = "MAXIMUM_ADDED"
	MaximumRemoved            DiffKind = "MAXIMUM_REMOVED"
	MaximumIncreased          DiffKind = "MAXIMUM_INCREASED"
	MaximumDecreased          DiffKind = "MAXIMUM_DECREASED"
	MinimumAdded              DiffKind = "MINIMUM_ADDED"
	MinimumRemoved            DiffKind = "MINIMUM_REMOVED"
	MinimumIncreased          DiffKind = "MINIMUM_INCREASED"
	MinimumDecreased          DiffKind = "MINIMUM_DECREASED"
	ExclusiveMaximumAdded     DiffKind = "EXCLUSIVE_MAXIMUM_ADDED"
	ExclusiveMaximumRemoved   DiffKind = "EXCLUSIVE_MAXIMUM_REMOVED"
	ExclusiveMaximumIncreased DiffKind = "EXCLUSIVE_MAXIMUM_INCREASED"
	ExclusiveMaximumDecreased DiffKind = "EXCLUSIVE_MAXIMUM_DECREASED"
	ExclusiveMinimumAdded     DiffKind = "EXCLUSIVE_MINIMUM_ADDED"
	ExclusiveMinimumRemoved   DiffKind = "EXCLUSIVE_MINIMUM_REMOVED"
	ExclusiveMinimumIncreased DiffKind = "EXCLUSIVE_MINIMUM_INCREASED"
	ExclusiveMinimumDecreased DiffKind = "EXCLUSIVE_MINIMUM_DECREASED"
	MultipleOfAdded           DiffKind = "MULTIPLE_OF_ADDED"
	MultipleOfRemoved         DiffKind = "MULTIPLE_OF_REMOVED"
	MultipleOfExpanded        DiffKind = "MULTIPLE_OF_EXPANDED"
	MultipleOfReduced         DiffKind = "MULTIPLE_OF_REDUCED"
	MultipleOfChanged         DiffKind = "MULTIPLE_OF_CHANGED"

	// Objects.
	RequiredAttributeAdded            DiffKind = "REQUIRED_ATTRIBUTE_ADDED"
	RequiredAttributeWithDefaultAdded DiffKind = "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
	RequiredAttributeRemoved          DiffKind = "REQUIRED_ATTRIBUTE_REMOVED"

	// A property added where the old schema was open (undeclared
	// properties allowed, so old data may hold any value under its name).
	// Strict: only an unconstrained property is compatible; GoAware: all
	// are, except a required one without a default, which it reports as
	// REQUIRED_ATTRIBUTE_ADDED.
	RequiredPropertyAddedToOpenContentModel            DiffKind = "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
	RequiredPropertyWithDefaultAddedToOpenContentModel DiffKind = "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"
	OptionalPropertyAddedToOpenContentModel            DiffKind = "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
	PropertyWithEmptySchemaAddedToOpenContentModel     DiffKind = "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"

	// Deprecated: Confluent split this kind by what was added; Diff now
	// reports RequiredPropertyAddedToOpenContentModel,
	// RequiredPropertyWithDefaultAddedToOpenContentModel,
	// OptionalPropertyAddedToOpenContentModel or
	// PropertyWithEmptySchemaAddedToOpenContentModel and never this one.
	PropertyAddedToOpenContentModel DiffKind = "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"

	// A property added where the old schema was closed or partially open
	// ("unopen"): old data never has it (or has it only as the partial
	// schema allowed), so only requiring it without a default is a break.
	RequiredPropertyAddedToUnopenContentModel            DiffKind = "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
	RequiredPropertyWithDefaultAddedToUnopenContentModel DiffKind = "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
	OptionalPropertyAddedToUnopenContentModel            DiffKind = "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"

	PropertyRemovedFromOpenContentModel   DiffKind = "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL"
	PropertyRemovedFromClosedContentModel DiffKind = "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	// A property whose schema was false (old data never has it) removed
	// from a closed model: compatible.
	PropertyWithFalseRemovedFromClosedContentModel DiffKind = "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"

	PropertyAddedIsCoveredByPartiallyOpen    DiffKind = "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	PropertyAddedNotCoveredByPartiallyOpen   DiffKind = "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	PropertyRemovedIsCoveredByPartiallyOpen  DiffKind = "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	PropertyRemovedNotCoveredByPartiallyOpen DiffKind = "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	AdditionalPropertiesAdded                DiffKind = "ADDITIONAL_PROPERTIES_ADDED"
	AdditionalPropertiesRemoved              DiffKind = "ADDITIONAL_PROPERTIES_REMOVED"
	AdditionalPropertiesExtended             DiffKind = "ADDITIONAL_PROPERTIES_EXTENDED"
	AdditionalPropertiesNarrowed             DiffKind = "ADDITIONAL_PROPERTIES_NARROWED"
	PatternPropertyAdded                     DiffKind = "PATTERN_PROPERTY_ADDED"
	PatternPropertyRemoved                   DiffKind = "PATTERN_PROPERTY_REMOVED"
	PropertyNamesAdded                       DiffKind = "PROPERTY_NAMES_ADDED"
	PropertyNamesRemoved                     DiffKind = "PROPERTY_NAMES_REMOVED"
	MaxPropertiesAdded                       DiffKind = "MAX_PROPERTIES_ADDED"
	MaxPropertiesRemoved                     DiffKind = "MAX_PROPERTIES_REMOVED"
	MaxPropertiesIncreased                   DiffKind = "MAX_PROPERTIES_INCREASED"
	MaxPropertiesDecreased                   DiffKind = "MAX_PROPERTIES_DECREASED"
	MinPropertiesAdded                       DiffKind = "MIN_PROPERTIES_ADDED"
	MinPropertiesRemoved                     DiffKind = "MIN_PROPERTIES_REMOVED"
	MinPropertiesIncreased                   DiffKind = "MIN_PROPERTIES_INCREASED"
	MinPropertiesDecreased                   DiffKind = "MIN_PROPERTIES_DECREASED"
	DependencyArrayAdded                     DiffKind = "DEPENDENCY_ARRAY_ADDED"
	DependencyArrayRemoved                   DiffKind = "DEPENDENCY_ARRAY_REMOVED"
	DependencyArrayExtended                  DiffKind = "DEPENDENCY_ARRAY_EXTENDED"
	DependencyArrayNarrowed                  DiffKind = "DEPENDENCY_ARRAY_NARROWED"
	DependencyArrayChanged                   DiffKind = "DEPENDENCY_ARRAY_CHANGED"
	DependencySchemaAdded                    DiffKind = "DEPENDENCY_SCHEMA_ADDED"
	DependencySchemaRemoved                  DiffKind = "DEPENDENCY_SCHEMA_REMOVED"

	// The rule for undeclared properties when it comes from
	// unevaluatedProperties (drafts 2019-09 and 2020-12), named like the
	// ADDITIONAL_PROPERTIES_* kinds: ADDED means undeclared properties are
	// now allowed (compatible), REMOVED that they no longer are, EXTENDED
	// that their schema accepts more (compatible), NARROWED less.
	UnevaluatedPropertiesAdded    DiffKind = "UNEVALUATED_PROPERTIES_ADDED"
	UnevaluatedPropertiesRemoved  DiffKind = "UNEVALUATED_PROPERTIES_REMOVED"
	UnevaluatedPropertiesExtended DiffKind = "UNEVALUATED_PROPERTIES_EXTENDED"
	UnevaluatedPropertiesNarrowed DiffKind = "UNEVALUATED_PROPERTIES_NARROWED"

	// Deprecated: Confluent names an "items" schema added to or removed
	// from a list SCHEMA_ADDED / SCHEMA_REMOVED; Diff reports SchemaAdded
	// and SchemaRemoved and never these.
	ItemsAdded   DiffKind = "ITEMS_ADDED"
	ItemsRemoved DiffKind = "ITEMS_REMOVED"

	// Positional items (prefixItems, or a draft-07/2019-09 items array).
	ItemAddedToOpenContentModel                DiffKind = "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
	ItemWithEmptySchemaAddedToOpenContentModel DiffKind = "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
	ItemAddedToClosedContentModel              DiffKind = "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL"
	ItemRemovedFromOpenContentModel            DiffKind = "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL"
	ItemRemovedFromClosedContentModel          DiffKind = "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	ItemWithFalseRemovedFromClosedContentModel DiffKind = "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	ItemAddedIsCoveredByPartiallyOpen          DiffKind = "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	ItemAddedNotCoveredByPartiallyOpen         DiffKind = "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	ItemRemovedIsCoveredByPartiallyOpen        DiffKind = "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	ItemRemovedNotCoveredByPartiallyOpen       DiffKind = "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	AdditionalItemsAdded                       DiffKind = "ADDITIONAL_ITEMS_ADDED"
	AdditionalItemsRemoved                     DiffKind = "ADDITIONAL_ITEMS_REMOVED"
	AdditionalItemsExtended                    DiffKind = "ADDITIONAL_ITEMS_EXTENDED"
	AdditionalItemsNarrowed                    DiffKind = "ADDITIONAL_ITEMS_NARROWED"
	MaxItemsAdded                              DiffKind = "MAX_ITEMS_ADDED"
	MaxItemsRemoved                            DiffKind = "MAX_ITEMS_REMOVED"
	MaxItemsIncreased                          DiffKind = "MAX_ITEMS_INCREASED"
	MaxItemsDecreased                          DiffKind = "MAX_ITEMS_DECREASED"
	MinItemsAdded                              DiffKind = "MIN_ITEMS_ADDED"
	MinItemsRemoved                            DiffKind = "MIN_ITEMS_REMOVED"
	MinItemsIncreased                          DiffKind = "MIN_ITEMS_INCREASED"
	MinItemsDecreased                          DiffKind = "MIN_ITEMS_DECREASED"
	UniqueItemsAdded                           DiffKind = "UNIQUE_ITEMS_ADDED"
	UniqueItemsRemoved                         DiffKind = "UNIQUE_ITEMS_REMOVED"
	ContainsAdded                              DiffKind = "CONTAINS_ADDED"
	ContainsRemoved                            DiffKind = "CONTAINS_REMOVED"
	MaxContainsAdded                           DiffKind = "MAX_CONTAINS_ADDED"
	MaxContainsRemoved                         DiffKind = "MAX_CONTAINS_REMOVED"
	MaxContainsIncreased                       DiffKind = "MAX_CONTAINS_INCREASED"
	MaxContainsDecreased                       DiffKind = "MAX_CONTAINS_DECREASED"
	MinContainsAdded                           DiffKind = "MIN_CONTAINS_ADDED"
	MinContainsRemoved                         DiffKind = "MIN_CONTAINS_REMOVED"
	MinContainsIncreased                       DiffKind = "MIN_CONTAINS_INCREASED"
	MinContainsDecreased                       DiffKind = "MIN_CONTAINS_DECREASED"

	// The rule for items no other keyword evaluates, when it comes from
	// unevaluatedItems; same polarity as ADDITIONAL_ITEMS_*.
	UnevaluatedItemsAdded    DiffKind = "UNEVALUATED_ITEMS_ADDED"
	UnevaluatedItemsRemoved  DiffKind = "UNEVALUATED_ITEMS_REMOVED"
	UnevaluatedItemsExtended DiffKind = "UNEVALUATED_ITEMS_EXTENDED"
	UnevaluatedItemsNarrowed DiffKind = "UNEVALUATED_ITEMS_NARROWED"

	// Combinations and conditionals.
	//
	// COMBINED_TYPE_EXTENDED / _CHANGED: the combinator changed (anyOf,
	// oneOf, allOf); extended when the new one accepts at least as much
	// (anything to anyOf, oneOf to anyOf, a single-member one to oneOf, a
	// single-member one from allOf), changed (a break) otherwise.
	// SUM_TYPE_EXTENDED / _NARROWED: more or fewer anyOf/oneOf
	// alternatives; PRODUCT_TYPE_EXTENDED / _NARROWED: more or fewer allOf
	// members. COMBINED_TYPE_SUBSCHEMAS_CHANGED (Strict): an old
	// alternative that no new one accepts.
	SumTypeExtended               DiffKind = "SUM_TYPE_EXTENDED"
	SumTypeNarrowed               DiffKind = "SUM_TYPE_NARROWED"
	ProductTypeExtended           DiffKind = "PRODUCT_TYPE_EXTENDED"
	ProductTypeNarrowed           DiffKind = "PRODUCT_TYPE_NARROWED"
	CombinedTypeExtended          DiffKind = "COMBINED_TYPE_EXTENDED"
	CombinedTypeChanged           DiffKind = "COMBINED_TYPE_CHANGED"
	CombinedTypeSubschemasChanged DiffKind = "COMBINED_TYPE_SUBSCHEMAS_CHANGED"

	// NOT_TYPE_* name what happened to the excluded set, as Confluent does:
	// NARROWED (it excludes less, so the schema accepts more) is
	// compatible, EXTENDED (it excludes more, a "not" added included) is a
	// break.
	NotTypeExtended DiffKind = "NOT_TYPE_EXTENDED"
	NotTypeNarrowed DiffKind = "NOT_TYPE_NARROWED"

	ConditionChanged DiffKind = "CONDITION_CHANGED"
)

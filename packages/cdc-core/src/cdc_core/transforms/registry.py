"""The built-in transforms, listed once for ``cdc_core.builtins.register_transforms``."""

from __future__ import annotations

from cdc_core.transforms.by_logical_table_router import ByLogicalTableRouter
from cdc_core.transforms.cast import CastKey, CastValue
from cdc_core.transforms.extract_field import ExtractFieldKey, ExtractFieldValue
from cdc_core.transforms.extract_new_record_state import ExtractNewRecordState
from cdc_core.transforms.flatten import FlattenKey, FlattenValue
from cdc_core.transforms.header_from import HeaderFromKey, HeaderFromValue
from cdc_core.transforms.headers import DropHeaders, InsertHeader
from cdc_core.transforms.hoist_field import HoistFieldKey, HoistFieldValue
from cdc_core.transforms.insert_field import InsertFieldKey, InsertFieldValue
from cdc_core.transforms.kafka_filter import KafkaFilter
from cdc_core.transforms.mask_field import MaskFieldKey, MaskFieldValue
from cdc_core.transforms.read_to_insert import ReadToInsertEvent
from cdc_core.transforms.regex_router import RegexRouter
from cdc_core.transforms.replace_field import ReplaceFieldKey, ReplaceFieldValue
from cdc_core.transforms.set_schema_metadata import SetSchemaMetadataKey, SetSchemaMetadataValue
from cdc_core.transforms.timestamp_converter import TimestampConverterKey, TimestampConverterValue
from cdc_core.transforms.timestamp_router import TimestampRouter
from cdc_core.transforms.value_to_key import ValueToKey

BUILTIN_TRANSFORMS: tuple[type, ...] = (
    ExtractNewRecordState, ByLogicalTableRouter, ReadToInsertEvent,
    RegexRouter, TimestampRouter, ValueToKey,
    ReplaceFieldKey, ReplaceFieldValue, InsertFieldKey, InsertFieldValue,
    ExtractFieldKey, ExtractFieldValue, MaskFieldKey, MaskFieldValue,
    CastKey, CastValue, HeaderFromKey, HeaderFromValue, FlattenKey, FlattenValue,
    TimestampConverterKey, TimestampConverterValue, KafkaFilter, DropHeaders, InsertHeader, HoistFieldKey, HoistFieldValue, SetSchemaMetadataKey, SetSchemaMetadataValue,
)

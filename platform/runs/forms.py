"""The run form: its fields are generated from ``umbra.config.RunConfig`` so that
the form, the API and the job share one schema; all checks are the schema's."""
from __future__ import annotations

import hashlib
import typing
from pathlib import Path

from django import forms
from django.conf import settings

from runs.config_check import check_config
from runs.validators import printable_name
from umbra.config import RunConfig
from umbra.data.gsm8k import DatasetError, parse_lines

# Problems per uploaded data set: GSM8K's training split has 7,473; the job holds them all in memory.
MAX_DATASET_ROWS = 100_000


def _field_for(name: str, info) -> forms.Field:
    """A permissive Django field for one schema field (the schema does the validation)."""
    default = info.default
    common = {"required": False, "initial": default, "help_text": info.description or "",
              "label": name.replace("_", " ")}
    if info.annotation is bool:
        return forms.BooleanField(**common)
    if typing.get_origin(info.annotation) is typing.Literal:
        choices = [(c, c) for c in typing.get_args(info.annotation)]
        return forms.ChoiceField(choices=choices, **common)
    # Numbers come in as text so that "abc" reaches the schema and gets its message.
    return forms.CharField(max_length=500, **common)


class RunForm(forms.Form):
    """Experiment name, optional dataset upload, then every RunConfig field."""

    experiment = forms.CharField(max_length=200, initial="demo", validators=[printable_name])
    dataset_file = forms.FileField(required=False, help_text="GSM8K-style JSONL; overrides 'dataset'")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, info in RunConfig.model_fields.items():
            self.fields[name] = _field_for(name, info)

    def clean_dataset_file(self):
        upload = self.cleaned_data.get("dataset_file")
        if not upload:
            return None
        if upload.size > settings.DATASET_UPLOAD_MAX_BYTES:
            raise forms.ValidationError(f"file is {upload.size:,} bytes; at most {settings.DATASET_UPLOAD_MAX_BYTES:,}")
        raw = upload.read()
        try:
            lines = raw.decode("utf-8").splitlines()
        except UnicodeDecodeError:
            raise forms.ValidationError("file is not UTF-8 text") from None
        rows = sum(1 for line in lines if line.strip())
        if rows > MAX_DATASET_ROWS:
            raise forms.ValidationError(f"file has {rows} problems; at most {MAX_DATASET_ROWS}")
        try:
            parse_lines(lines)
        except DatasetError as exc:
            raise forms.ValidationError(str(exc)) from None
        return raw

    def clean(self):
        data = super().clean()
        raw = data.get("dataset_file")
        values = {k: data[k] for k in RunConfig.model_fields if data.get(k) not in (None, "")}
        for name, info in RunConfig.model_fields.items():
            if info.annotation is bool:  # an unchecked box is absent from POST: it means False
                values[name] = bool(data.get(name))
        if raw:
            values["dataset"] = "arith"  # validate the rest before anything is written to disk
        config, errors = check_config(values)
        for field, messages in errors.items():
            if field == "dataset" and raw:
                field = "dataset_file"
            for msg in messages:
                self.add_error(field if field in self.fields else None, msg)
        if config is not None and not self.errors:
            data["config"] = config.model_copy(update={"dataset": str(_store_dataset(raw))}) if raw else config
        return data


def _store_dataset(raw: bytes) -> Path:
    """Keep an uploaded data set under MEDIA_ROOT/datasets, named by content hash."""
    folder = Path(settings.MEDIA_ROOT) / "datasets"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha256(raw).hexdigest()[:16]}.jsonl"
    if not path.exists():
        path.write_bytes(raw)
    return path

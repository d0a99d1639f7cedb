"""A dense story (every reply states two facts, so most facts live only in the story, not
in a memory) played on the ashford-manor scenario, with the questions that find its facts,
a reply holding markup, and the settings it is played with: memories as the product writes
them without a model (the extractive writer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import make_settings

from talekeeper_testkit.double import ModelDouble

# Every reply states two facts; a memory of a block (the extractive writer's, at most 50
# words) keeps one or two of its block's sentences, so most facts live only in the story.
DENSE = [
    "The butler Harlow polishes the silver. He says the library clock stopped at ten past nine.",
    "Miss Verity arranges lilies in the hall. Her brother Edmund owes a bookmaker ninety guineas.",
    "Rain lashes the conservatory glass. The gardener Pike keeps the greenhouse key on a red cord.",
    "Lady Ashford rings for tea. She sold the family emeralds to a jeweller in Bath last spring.",
    "The cook, Mrs. Dunne, bakes a seed cake. Her son Alfie drives the station cab on Thursdays.",
    "A telegram comes for the colonel. The steamer Meridian docked at Plymouth a day early.",
    'Pike shows you a scrap of paper. It reads <img src=x onerror="window.__pwned=1"> in a '
    "shaky hand.",
    "The colonel cleans his revolver by the fire. He served eleven years in the Punjab.",
    "Edmund paces the terrace at dusk. He swears he never left the billiard room that night.",
    "The maid Rosie drops a tray of cups. She saw a lantern moving in the orchard at midnight.",
    "Harlow locks the cellar door. Only he and Lady Ashford hold keys to the wine store.",
    "Fog settles over the lawn. The vicar arrives on foot and asks for the colonel by name.",
    "A dog barks from the stables. The groom Carver left the manor before the inquest.",
    "The lamps are lit in the gallery. A portrait of the late Sir Hugh hangs crooked there.",
]
FACT = "Her brother Edmund owes a bookmaker ninety guineas."
QUESTION = "Who owes money to a bookmaker, and how many guineas?"
HOSTILE = 'It reads <img src=x onerror="window.__pwned=1"> in a shaky hand.'
HOSTILE_QUESTION = "What does the scrap of paper in the shaky hand read?"
SCENARIO = "ashford-manor"


def dense_settings(tmp_path: Path, double: ModelDouble, **env: str) -> Any:
    values = {
        "endpoint_url": double.url,
        "model": "double-narrator",
        "embedding_model": "double-embed",
        "summary_model": "extractive",  # memories as the product writes them without a model
        "timeout": "2",
    }
    values.update(env)
    return make_settings(tmp_path, **values)

"""The Scene as a view of the world (docs/world.md): where the player is and who is
present come from the world's state when it knows them.

Invariants:

- A Scene the player set is the player's, whatever the world says.
- Otherwise the world's location and present people replace the story cards' guess
  (``memory.scene``), each only where the world knows it; the summary line stays.
- The turn's retrieval query and the Scene the player sees use the same rule.
"""

from __future__ import annotations

from dataclasses import replace

from talekeeper.services.memory.scene import Scene, current_scene
from talekeeper.services.story.tree import Story
from talekeeper.services.world.events import state_through
from talekeeper.services.world.projection import WorldState


def with_world(scene: Scene, state: WorldState) -> Scene:
    if scene.by_player:
        return scene
    location = state.location.name if state.location is not None else scene.location
    present = tuple(r.name for r in state.present) or scene.present
    return replace(scene, location=location, present=present)


def scene_now(story: Story) -> Scene:
    """The Scene at the head of the current path."""
    scene = current_scene(story)
    return scene if scene.by_player else with_world(scene, state_through(story, None))

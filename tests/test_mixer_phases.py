"""The phases of a mixer with a recurrent state, one rule (blocks/base.MixerPhases): every such mixer
is built for train, prefill, chunk or decode, refuses any other phase with one sentence naming its
class, and runs n tokens a sequence, one in a decode step. Nine mixers wrote this check, five the
token rule, each their own until session 29."""

from __future__ import annotations

import pytest
import sympy as sp

from costmodel import symbols as S
from costmodel.blocks.base import MIXER_PHASES, MixerPhases
from costmodel.blocks.deltanet import GatedDeltaNetMixer
from costmodel.blocks.kda import KimiDeltaAttentionMixer
from costmodel.blocks.lightning import LightningAttentionMixer
from costmodel.blocks.mamba import Mamba2Mixer
from costmodel.blocks.mamba1 import Mamba1Mixer
from costmodel.blocks.mlstm import MLSTMMixer
from costmodel.blocks.rglru import RGLRUMixer
from costmodel.blocks.rwkv import RwkvChannelMix, RwkvTimeMix
from costmodel.blocks.shortconv import ShortConvMixer

MIXERS = (GatedDeltaNetMixer, KimiDeltaAttentionMixer, LightningAttentionMixer, Mamba2Mixer, Mamba1Mixer,
          MLSTMMixer, RGLRUMixer, RwkvChannelMix, RwkvTimeMix, ShortConvMixer)


@pytest.mark.parametrize("mixer", MIXERS, ids=lambda cls: cls.__name__)
def test_a_mixer_takes_the_four_phases_and_refuses_another(mixer):
    assert issubclass(mixer, MixerPhases) and MIXER_PHASES == ("train", "prefill", "chunk", "decode")
    assert [mixer(phase).seq for phase in MIXER_PHASES] == [S.n, S.n, S.n, sp.Integer(1)]
    with pytest.raises(ValueError, match=rf"^{mixer.__name__} phase 'serve' is not train, prefill, chunk or decode\.$"):
        mixer("serve")

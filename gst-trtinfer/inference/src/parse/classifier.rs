// SPDX-License-Identifier: MIT OR Apache-2.0
//! Classifiers: class scores `[N,C]` or `[N,C,1,1]`; the top class of each item, its score
//! turned into a probability by a softmax unless the outputs already are probabilities.

use super::anchor::argmax;
use super::{Family, ParserSettings, Produces, describe, is_classifier_shape, item_dims};
use crate::config::{ParserKind, Softmax};
use crate::engine::{OutputTensor, TensorInfo};

#[derive(Debug, Clone, PartialEq)]
pub struct Classifier {
    pub output: usize,
    pub softmax: Softmax,
}

impl Family for Classifier {
    fn recognise(outputs: &[TensorInfo], _settings: &ParserSettings) -> bool {
        matches!(outputs, [o] if is_classifier_shape(o))
    }

    fn select(outputs: &[TensorInfo], settings: &ParserSettings) -> Result<Self, String> {
        let Some(output) = outputs.iter().position(is_classifier_shape) else {
            return Err(format!(
                "a classifier needs an output shaped [N,C] or [N,C,1,1]; the model has {}",
                describe(outputs)
            ));
        };
        Ok(Classifier {
            output,
            softmax: settings.softmax,
        })
    }

    fn kind(&self) -> ParserKind {
        ParserKind::Classifier
    }

    fn produces(&self) -> Produces {
        Produces::Classes
    }

    fn remap(&mut self, map: &[usize]) {
        self.output = map[self.output];
    }

    fn num_classes(&self, outputs: &[TensorInfo]) -> Option<usize> {
        item_dims(&outputs[self.output]).first().copied().flatten()
    }

    fn top_class(&self, outputs: &[OutputTensor], item: usize) -> Option<(u32, f32)> {
        let scores = outputs[self.output].item(item);
        if scores.is_empty() {
            return None;
        }
        let (class, best) = argmax(scores);
        let is_distribution = scores.iter().all(|&p| (0.0..=1.0).contains(&p))
            && (scores.iter().sum::<f32>() - 1.0).abs() < 1e-3;
        let prob = match self.softmax {
            Softmax::Never => best,
            Softmax::Auto if is_distribution => best,
            _ => {
                let sum: f32 = scores.iter().map(|&v| (v - best).exp()).sum();
                1.0 / sum
            }
        };
        Some((class as u32, prob))
    }
}

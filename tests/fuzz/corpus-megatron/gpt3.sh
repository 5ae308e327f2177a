# stepcast export megatron: gpt3-175b on 1024 x a100-80gb (cluster.gpu is not a Megatron-LM flag)
torchrun --nnodes 128 --nproc-per-node 8 pretrain_gpt.py \
  --num-layers 96 --hidden-size 12288 --num-attention-heads 96 \
  --ffn-hidden-size 49152 --seq-length 2048 --max-position-embeddings 2048 --vocab-size 51200 \
  --hidden-dropout 0.1 --attention-dropout 0.1 \
  --micro-batch-size 1 --global-batch-size 1536 \
  --fp16 \
  --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 \
  --transformer-impl transformer_engine \
  --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 --context-parallel-size 1 \
  --overlap-grad-reduce \
  --distributed-backend nccl

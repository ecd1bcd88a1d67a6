# Stage 2: one HDF5 embedding file per (model, task); the GPU stage.
# params carry the output-affecting settings (the rerun key); device and batch size are execution knobs
# read from config["execution"] inside the script, so changing them reruns nothing.


rule extract_embeddings:
    input:
        train="resources/tasks/{task}/train.parquet",
        test="resources/tasks/{task}/test.parquet",
        card="resources/tasks/{task}/card.json",
    output:
        "resources/embeddings/{model}/{xhash}/{task}.h5",
    params:
        settings=extraction_params,
    log:
        "logs/extract_embeddings/{model}/{xhash}/{task}.log",
    benchmark:
        "benchmarks/extract_embeddings/{model}/{xhash}/{task}.tsv"
    conda:
        "../envs/geneb.yaml"
    script:
        "../scripts/extract_embeddings.py"
